// The ask page: one question to the served bm25, dense, search (hybrid) and qa pipelines, with the
// page's top-k and title filter; example questions; the store's state (store.js) and results (render.js).
"use strict";

// Questions about the bundled example corpus (examples/corpus.jsonl), each with the document it is about:
// one is offered only when the served store holds that document, so a store of the user's own gets none.
// The last has no answer in that corpus; it is offered when the store holds every other one's document.
const EXAMPLES = [
  { question: "who wrote hamlet", id: "hamlet", title: "Hamlet" },
  { question: "how tall is mount everest", id: "mount-everest", title: "Mount Everest" },
  { question: "when did marie curie win her second nobel prize", id: "marie-curie", title: "Marie Curie" },
  { question: "what gas do plants release during photosynthesis", id: "photosynthesis", title: "Photosynthesis" },
  { question: "what is the capital of australia", id: null, title: null },
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

// One pipeline asked: { error (one line, or null), found (spans or passages listed) }.
async function ask(name, query, options) {
  clearResults(name);
  $("time-" + name).textContent = "…";
  const outcome = await api("/" + name + "/run", Object.assign({ query }, options));
  $("time-" + name).textContent = Math.round(outcome.ms) + " ms";
  if (!outcome.ok) {
    $("error-" + name).textContent = outcome.error;
    return { error: outcome.error, found: 0 };
  }
  if (name === "qa") return { error: null, found: renderAnswers(outcome.data.result.answers) };
  renderDocuments(name, outcome.data.result.documents);
  return { error: null, found: outcome.data.result.documents.length };
}

// When every list answered with no passage and the reader found no span, the banner says that nothing
// matched, not that the passages below hold no confident answer.
function noteNoMatch(names, outcomes, options) {
  const lists = names.filter((name, i) => LISTS.includes(name) && outcomes[i].error === null);
  const qa = names.indexOf("qa");
  if (!lists.length || qa < 0 || outcomes[qa].error !== null || outcomes[qa].found) return;
  if (lists.every((name) => outcomes[names.indexOf(name)].found === 0)) renderNoMatch(options.filters && options.filters.value);
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
  const outcomes = await Promise.all(names.map((name) => ask(name, query, options)));
  $("ask").disabled = false;
  noteNoMatch(names, outcomes, options);
  const failed = outcomes.map((outcome) => outcome.error).filter((e) => e !== null);
  $("status").textContent = failed.length === names.length ? "" : describe(names, options, performance.now() - started);
  if (failed.length === names.length) $("error").textContent = failed[0];  // e.g. a wrong API key: one line
  if (failed.length && failed.every((e) => e.startsWith("503"))) await refreshStore();
}

// Whether the served store holds the example's document (GET /documents/{id}: its id and title).
async function holds(example) {
  const outcome = await api("/documents/" + encodeURIComponent(example.id));
  return outcome.ok && outcome.data.title === example.title;
}

// The example questions the served store can answer (see EXAMPLES), as chips; none for a store of one's own.
async function loadExamples() {
  const about = EXAMPLES.filter((example) => example.id !== null);
  const held = await Promise.all(about.map(holds));
  const found = about.filter((example, i) => held[i]);
  const shown = found.length === about.length ? EXAMPLES : found;
  const box = $("examples");
  box.querySelectorAll("button.chip").forEach((chip) => chip.remove());
  for (const { question } of shown) {
    const chip = button(question, "Ask: " + question, () => {
      $("question").value = question;
      submit(null);
    });
    chip.className = "chip";
    box.appendChild(chip);
  }
  box.dataset.count = String(shown.length);
}

document.addEventListener("DOMContentLoaded", () => {
  $("ask-form").addEventListener("submit", submit);
  $("api-key").addEventListener("change", refreshStore);
  $("document-close").addEventListener("click", () => $("document-view").close());
  setUpUpload();
  refreshStore();
});
