// The ask page: one question to the served bm25, dense, search (hybrid) and qa pipelines, with the
// page's top-k and title filter; example questions; the store's state (store.js) and results (render.js).
"use strict";

const EXAMPLES = [
  "who wrote hamlet",
  "how tall is mount everest",
  "when did marie curie win her second nobel prize",
  "what gas do plants release during photosynthesis",
  "what is the capital of australia",
];

// The request fields the page adds to each call, or an Error saying which control is wrong.
function requestOptions() {
  const topK = Number($("top-k").value);
  if (!Number.isInteger(topK) || topK < 1 || topK > 20) throw new Error("results per list: give a whole number from 1 to 20");
  const title = $("title-filter").value.trim();
  const options = { top_k: topK };
  if (title) options.filters = { field: "meta.title", operator: "==", value: title };
  return options;
}

async function ask(name, query, options) {
  clearResults(name);
  $("time-" + name).textContent = "…";
  const outcome = await api("/" + name + "/run", Object.assign({ query }, options));
  $("time-" + name).textContent = Math.round(outcome.ms) + " ms";
  if (!outcome.ok) {
    $("error-" + name).textContent = outcome.error;
    return outcome.error;
  }
  if (name === "qa") renderAnswers(outcome.data.result.answers);
  else renderDocuments(name, outcome.data.result.documents);
  return null;
}

function describe(names, options, ms) {
  const filter = options.filters ? ", title is \u201c" + options.filters.value + "\u201d" : "";
  return "asked " + names.join(", ") + " (" + options.top_k + " per list" + filter + ") in " + Math.round(ms) + " ms";
}

async function submit(event) {
  if (event) event.preventDefault();
  $("error").textContent = "";
  const query = $("question").value.trim();
  if (!query) { $("status").textContent = "type a question first"; return; }
  let options;
  try { options = requestOptions(); } catch (error) { $("error").textContent = error.message; return; }
  if (store.served === null) await refreshStore();
  if (store.served === null || $("ask").disabled) return;
  const names = READING.filter((name) => store.served.has(name));
  $("ask").disabled = true;
  $("status").dataset.kind = "";
  $("status").textContent = "asking " + names.join(", ") + "…";
  const started = performance.now();
  const errors = await Promise.all(names.map((name) => ask(name, query, options)));
  $("ask").disabled = false;
  const failed = errors.filter((e) => e !== null);
  $("status").textContent = failed.length === names.length ? "" : describe(names, options, performance.now() - started);
  if (failed.length === names.length) $("error").textContent = failed[0];  // e.g. a wrong API key: one line
  if (failed.length && failed.every((e) => e.startsWith("503"))) await refreshStore();
}

function setUpExamples() {
  const box = $("examples");
  for (const question of EXAMPLES) {
    const chip = button(question, "Ask: " + question, () => {
      $("question").value = question;
      submit(null);
    });
    chip.className = "chip";
    box.appendChild(chip);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("ask-form").addEventListener("submit", submit);
  $("api-key").addEventListener("change", refreshStore);
  $("document-close").addEventListener("click", () => $("document-view").close());
  setUpExamples();
  setUpUpload();
  refreshStore();
});
