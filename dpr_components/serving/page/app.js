// The ask page: one question to the served bm25, dense, search (hybrid) and qa pipelines.
// Text from the server is only ever set as text (never parsed as HTML); the API key stays in this variable.
"use strict";

const LISTS = ["bm25", "dense", "search"];
const TOP_K = 5;
const SNIPPET = 240;
let served = null;

function $(id) { return document.getElementById(id); }

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("api-key").value.trim();
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

function oneLine(text) { return String(text).split("\n")[0].slice(0, 500); }

async function call(name, body) {
  const started = performance.now();
  let response;
  try {
    response = await fetch("/" + name + "/run", { method: "POST", headers: headers(), body: JSON.stringify(body) });
  } catch (error) {
    return { ms: performance.now() - started, error: "could not reach the server" };
  }
  let data = null;
  try { data = await response.json(); } catch (error) { data = null; }
  const ms = performance.now() - started;
  if (!response.ok) {
    const detail = data && typeof data.detail === "string" ? data.detail : response.statusText;
    return { ms, error: oneLine(response.status + ": " + detail) };
  }
  return { ms, result: data.result };
}

function snippet(text) {
  const t = text || "";
  return t.length > SNIPPET ? t.slice(0, SNIPPET) + "…" : t;
}

function score(value) { return typeof value === "number" ? value.toFixed(3) : ""; }

function renderDocuments(name, documents) {
  const list = $("list-" + name);
  for (const doc of documents) {
    const item = el("li", "result");
    item.appendChild(el("span", "title", doc.title || doc.id));
    item.appendChild(el("span", "score", score(doc.score)));
    item.appendChild(el("p", "passage", snippet(doc.content)));
    list.appendChild(item);
  }
  if (!documents.length) list.appendChild(el("li", "empty", "no passages"));
}

// The passage with the answer span wrapped in <mark>, cut around it when the passage is long.
function highlighted(answer) {
  const p = el("p", "passage");
  const context = answer.context || "";
  const at = answer.offsets_in_context;
  if (!at || at.start < 0 || at.end > context.length || at.start >= at.end) {
    p.textContent = snippet(context);
    return p;
  }
  const from = Math.max(0, at.start - SNIPPET / 2);
  const to = Math.min(context.length, at.end + SNIPPET / 2);
  p.appendChild(document.createTextNode((from > 0 ? "…" : "") + context.slice(from, at.start)));
  p.appendChild(el("mark", null, context.slice(at.start, at.end)));
  p.appendChild(document.createTextNode(context.slice(at.end, to) + (to < context.length ? "…" : "")));
  return p;
}

// A reader's "no answer" (data null): the passages may not hold one; ranked by its probability.
function noAnswerItem(answer) {
  const item = el("li", "answer no-answer");
  item.appendChild(el("span", "answer-text", "No confident answer: the passages may not hold one"));
  item.appendChild(el("span", "score", "probability " + score(answer.score)));
  return item;
}

function renderAnswers(answers) {
  const list = $("answers");
  for (const answer of answers) {
    if (answer.data === null || answer.data === undefined) {
      list.appendChild(noAnswerItem(answer));
      continue;
    }
    const item = el("li", "answer");
    item.appendChild(el("span", "answer-text", answer.data || "(no answer)"));
    item.appendChild(el("span", "score", score(answer.score)));
    item.appendChild(el("span", "title", " — " + (answer.document_title || answer.document_id || "")));
    item.appendChild(highlighted(answer));
    list.appendChild(item);
  }
  if (!answers.length) list.appendChild(el("li", "empty", "no answers"));
}

function clear(name) {
  $(name === "qa" ? "answers" : "list-" + name).replaceChildren();
  $("error-" + name).textContent = "";
  $("time-" + name).textContent = "";
}

async function ask(name, query) {
  clear(name);
  $("time-" + name).textContent = "…";
  const outcome = await call(name, { query, top_k: TOP_K });
  $("time-" + name).textContent = Math.round(outcome.ms) + " ms";
  if (outcome.error) {
    $("error-" + name).textContent = outcome.error;
    return;
  }
  if (name === "qa") renderAnswers(outcome.result.answers);
  else renderDocuments(name, outcome.result.documents);
}

async function loadStatus() {
  try {
    const response = await fetch("/status");
    const data = await response.json();
    served = new Set(data.pipelines);
  } catch (error) {
    $("status").textContent = "could not reach the server";
    return;
  }
  for (const name of [...LISTS, "qa"]) {
    const panel = document.querySelector('[data-pipeline="' + name + '"]');
    if (!served.has(name)) {
      panel.classList.add("absent");
      $("error-" + name).textContent = "not served (no " + name + " pipeline)";
    }
  }
}

async function submit(event) {
  event.preventDefault();
  const query = $("question").value.trim();
  if (!query) { $("status").textContent = "type a question first"; return; }
  if (served === null) await loadStatus();
  if (served === null) return;
  const names = [...LISTS, "qa"].filter((name) => served.has(name));
  $("ask").disabled = true;
  $("status").textContent = "asking " + names.join(", ") + "…";
  const started = performance.now();
  await Promise.all(names.map((name) => ask(name, query)));
  $("status").textContent = "done in " + Math.round(performance.now() - started) + " ms";
  $("ask").disabled = false;
}

document.addEventListener("DOMContentLoaded", () => {
  $("ask-form").addEventListener("submit", submit);
  loadStatus();
});
