// The ask page's results: answers (or "no confident answer", or "no passage matches"), the three passage lists, passages that
// expand to their full text, and a source document's passages in order in a dialog.
"use strict";

const SEEN_TITLES = new Set();

function cut(text) {
  const t = text || "";
  return t.length > SNIPPET ? t.slice(0, SNIPPET) + "…" : t;
}

// A passage paragraph showing `short` (nodes) with a "Show all" button that swaps in the full text.
function expandable(short, full) {
  const wrap = el("div", "passage-wrap");
  const p = el("p", "passage");
  p.append(...short);
  wrap.appendChild(p);
  if (full.length <= SNIPPET) return wrap;
  const toggle = button("Show all", null, () => {
    const open = toggle.getAttribute("aria-expanded") === "true";
    p.replaceChildren(...(open ? short : [document.createTextNode(full)]));
    toggle.textContent = open ? "Show all" : "Show less";
    toggle.setAttribute("aria-expanded", String(!open));
  });
  toggle.classList.add("expand");
  toggle.setAttribute("aria-expanded", "false");
  wrap.appendChild(toggle);
  return wrap;
}

// Opens the source document `id` (or the one of passage `id`), marking passage `passageId` in it.
function documentButton(id, pipeline, title, passageId) {
  const open = button("Whole document", "Open the whole document " + (title || id), () => openDocument(id, pipeline, passageId));
  open.classList.add("open-document");
  return open;
}

function rememberTitle(title) {
  if (!title || SEEN_TITLES.has(title) || SEEN_TITLES.size >= 200) return;
  SEEN_TITLES.add(title);
  const option = document.createElement("option");
  option.value = title;
  $("titles").appendChild(option);
}

function passageItem(name, doc, relative) {
  const item = el("li", "result");
  const head = el("div", "result-head");
  head.appendChild(el("span", "title", doc.title || doc.id));
  const meter = el("meter", "relative");
  meter.min = 0; meter.max = 1; meter.value = relative;
  const share = el("span", "score", percent(relative));
  const tip = ["raw " + name + " score " + raw(doc.score), ...numbers(doc.meta)].join("; ");
  meter.title = tip; share.title = tip;
  meter.setAttribute("aria-label", "score " + percent(relative) + " of the best in this list");
  head.append(meter, share);
  item.appendChild(head);
  const wrap = item.appendChild(expandable([document.createTextNode(cut(doc.content))], doc.content || ""));
  const source = (doc.meta && typeof doc.meta.document_id === "string" && doc.meta.document_id) || doc.id;
  wrap.appendChild(documentButton(source, name, doc.title, doc.id));
  rememberTitle(doc.title);
  return item;
}

function renderDocuments(name, documents) {
  const list = $("list-" + name);
  const relative = relativeScores(documents);
  documents.forEach((doc, i) => list.appendChild(passageItem(name, doc, relative[i])));
  if (!documents.length) list.appendChild(el("li", "empty", "no passages match"));
}

// The passage around the answer span, the span in <mark>; the full passage when expanded.
function highlighted(answer) {
  const context = answer.context || "";
  const at = answer.offsets_in_context;
  if (!at || at.start < 0 || at.end > context.length || at.start >= at.end) {
    return expandable([document.createTextNode(cut(context))], context);
  }
  const from = Math.max(0, at.start - SNIPPET / 2);
  const to = Math.min(context.length, at.end + SNIPPET / 2);
  const short = [
    document.createTextNode((from > 0 ? "…" : "") + context.slice(from, at.start)),
    el("mark", null, context.slice(at.start, at.end)),
    document.createTextNode(context.slice(at.end, to) + (to < context.length ? "…" : "")),
  ];
  const wrap = expandable(short, context);
  const toggle = wrap.querySelector("button.expand");
  if (toggle) toggle.addEventListener("click", () => markFull(wrap, context, at));
  return wrap;
}

function markFull(wrap, context, at) {
  const p = wrap.querySelector(".passage");
  if (wrap.querySelector("button.expand").getAttribute("aria-expanded") !== "true") return;
  p.replaceChildren(document.createTextNode(context.slice(0, at.start)),
    el("mark", null, context.slice(at.start, at.end)), document.createTextNode(context.slice(at.end)));
}

function isNoAnswer(answer) { return answer.data === null || answer.data === undefined; }

function answerItem(answer) {
  const item = el("li", "answer");
  const head = el("div", "result-head");
  head.appendChild(el("span", "answer-text", answer.data || "(empty span)"));
  const confidence = el("span", "confidence", percent(answer.score));
  confidence.title = ["raw score " + raw(answer.score), ...numbers(answer.meta)].join("; ");
  confidence.setAttribute("aria-label", "probability " + percent(answer.score));
  head.appendChild(confidence);
  item.appendChild(head);
  item.appendChild(el("span", "title", answer.document_title || answer.document_id || ""));
  const wrap = item.appendChild(highlighted(answer));
  if (answer.document_id) wrap.appendChild(documentButton(answer.document_id, "qa", answer.document_title, answer.document_id));
  rememberTitle(answer.document_title);
  return item;
}

const VERDICT_NO_ANSWER = "No confident answer in the indexed passages.";

// The reader's answers, best first. Its "no answer" (data null) is never a ranked answer: first, it is the
// banner above the less likely spans; anywhere else, it is left out. Returns how many spans were listed.
function renderAnswers(answers) {
  const list = $("answers");
  const first = answers[0];
  const none = first !== undefined && isNoAnswer(first);
  $("verdict").hidden = !none;
  $("qa").classList.toggle("unsure", none);
  if (none) {
    $("verdict-title").textContent = VERDICT_NO_ANSWER;
    $("verdict-detail").textContent = "The reader puts " + percent(first.score) +
      " on \u201cthe passages it read do not hold the answer\u201d. Less likely spans and the passages are below.";
  }
  const spans = answers.filter((answer) => !isNoAnswer(answer));
  for (const answer of spans) list.appendChild(answerItem(answer));
  if (!answers.length) list.appendChild(el("li", "empty", "no answers"));
  return spans.length;
}

// No passage matched the question (and the title filter): said once, in the answers' banner.
function renderNoMatch(title) {
  $("answers").replaceChildren();
  $("verdict").hidden = false;
  $("qa").classList.add("unsure");
  $("verdict-title").textContent = title ? "No passage has the title \u201c" + title + "\u201d." : "No passage matches the question.";
  $("verdict-detail").textContent = title
    ? "Nothing was read: clear the title filter, or pick a title the lists showed before."
    : "Nothing was read: the store holds no passage for it.";
}

function clearResults(name) {
  $(name === "qa" ? "answers" : "list-" + name).replaceChildren();
  $("error-" + name).textContent = "";
  $("time-" + name).textContent = "";
  if (name === "qa") { $("verdict").hidden = true; $("qa").classList.remove("unsure"); }
}

// The source document of passage or document `id` from the store `pipeline` reads, in a dialog.
async function openDocument(id, pipeline, passageId) {
  const dialog = $("document-view");
  $("document-title").textContent = "Loading…";
  $("document-meta").textContent = "";
  $("document-error").textContent = "";
  $("document-passages").replaceChildren();
  if (!dialog.open) dialog.showModal();
  const path = "/documents/" + encodeURIComponent(id) + "?pipeline=" + encodeURIComponent(pipeline);
  const outcome = await api(path);
  if (!outcome.ok) {
    $("document-title").textContent = "Document";
    $("document-error").textContent = outcome.error;
    return;
  }
  renderDocument(outcome.data, passageId);
}

function renderDocument(doc, from) {
  $("document-title").textContent = doc.title || doc.id;
  const count = doc.passages.length;
  $("document-meta").textContent = "Source document \u201c" + doc.id + "\u201d: " + count +
    (count === 1 ? " passage" : " passages") + " in order, from the store of " + doc.pipeline + ".";
  const list = $("document-passages");
  for (const passage of doc.passages) {
    const item = el("li", passage.id === from ? "current" : null, passage.content || "");
    item.title = passage.id;
    list.appendChild(item);
  }
  const current = list.querySelector(".current");
  if (current) current.scrollIntoView({ block: "nearest" });
}
