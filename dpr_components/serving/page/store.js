// The served store on the ask page: which pipelines are served, whether their store was indexed and how
// many passages it holds, the empty-store state, and a file uploaded to POST /index/run: a corpus file read
// here into records, or a document (PDF, Word, HTML, Markdown, text) sent as it is when the server takes files.
"use strict";

const RECORD_FIELDS = ["id", "title", "text"];
const store = { served: null, ready: false, passages: null, problem: null, files: false };
// Sent as they are, converted by the server's folder pipeline (GET /status lists "index" in `uploads`).
const DOCUMENT_KINDS = ["pdf", "docx", "html", "htm", "md", "markdown", "txt", "text"];

// GET /status (public): the pipelines, whether their stores were indexed, and why those the server cannot
// serve answer 503 (`unavailable`): they are shown with that reason and not asked.
async function loadStatus() {
  const outcome = await api("/status");
  if (!outcome.ok) {
    $("error").textContent = outcome.error;
    return false;
  }
  const unavailable = outcome.data.unavailable || {};
  store.served = new Set(outcome.data.pipelines.filter((name) => !(name in unavailable)));
  const stores = outcome.data.stores || {};
  store.ready = READING.some((name) => store.served.has(name) && stores[name] && stores[name].ready);
  for (const name of READING) {
    const absent = !store.served.has(name);
    document.querySelector('[data-pipeline="' + name + '"]').classList.toggle("absent", absent);
    if (absent) {
      $("error-" + name).textContent = name in unavailable
        ? "cannot be served: " + oneLine(unavailable[name]) : "not served (no " + name + " pipeline)";
    }
  }
  const left = READING.filter((name) => name in unavailable);
  store.problem = left.length && !READING.some((name) => store.served.has(name)) ? oneLine(unavailable[left[0]]) : null;
  $("upload").hidden = !store.served.has("index");
  store.files = (outcome.data.uploads || []).includes("index");
  $("upload-file").accept = store.files
    ? ".jsonl,.json," + DOCUMENT_KINDS.map((kind) => "." + kind).join(",")
    : ".jsonl,.json,.txt,application/json,text/plain";
  $("upload-kinds").hidden = !store.files;
  return true;
}

// GET /stores (behind the API key): the passage count of the first indexed store the page reads.
async function loadCount() {
  const outcome = await api("/stores");
  if (!outcome.ok) {
    store.passages = null;
    $("store-count").textContent = outcome.status === 401 ? "passage count: give the API key" : "";
    if (outcome.status === 401) $("key-box").open = true;
    return;
  }
  const states = outcome.data.stores;
  const name = READING.find((n) => states[n] && states[n].ready && typeof states[n].passages === "number");
  store.passages = name === undefined ? null : states[name].passages;
  if (name !== undefined) store.ready = true;
  $("store-count").textContent = store.passages === null ? "" :
    store.passages.toLocaleString("en") + (store.passages === 1 ? " passage" : " passages") + " in the store";
}

function showStoreState() {
  if (store.problem !== null) $("error").textContent = store.problem;  // no pipeline of the page can answer
  const empty = store.served !== null && store.problem === null && (!store.ready || store.passages === 0);
  $("empty").hidden = !empty;
  $("results").hidden = empty;
  $("ask").disabled = empty || store.problem !== null;
  $("examples").hidden = empty || !Number($("examples").dataset.count);
  if (empty) {
    $("store-count").textContent = "no passages yet";
    $("status").textContent = store.served.has("index")
      ? "Index a corpus first: on the command line, or add a file below."
      : "Index a corpus first (see the command below).";
  } else if ($("status").dataset.kind === "store") {
    $("status").textContent = "";
  }
  $("status").dataset.kind = empty ? "store" : "";
}

async function refreshStore() {
  if (await loadStatus()) {
    await loadCount();
    if (store.ready && store.passages !== 0) await loadExamples();  // app.js: those the store can answer
  }
  showStoreState();
}

// ---- the upload: a file read here into records {id, title, text} -------------------------------------

function stem(fileName) { return fileName.replace(/^.*[\\/]/, "").replace(/\.[^.]*$/, "") || "document"; }

function checkedRecord(value, where, fallbackId) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(where + ": expected an object with id, title and text");
  }
  const unknown = Object.keys(value).filter((key) => !RECORD_FIELDS.includes(key));
  if (unknown.length) throw new Error(where + ": unknown field \u201c" + unknown[0] + "\u201d (a record has id, title and text)");
  if (typeof value.text !== "string" || !value.text.trim()) throw new Error(where + ": no \u201ctext\u201d (a non-empty string)");
  if (value.title !== undefined && typeof value.title !== "string") throw new Error(where + ": \u201ctitle\u201d must be a string");
  const id = value.id === undefined ? fallbackId : value.id;
  if (!(typeof id === "string" && id.trim()) && !Number.isInteger(id)) throw new Error(where + ": \u201cid\u201d must be a non-empty string");
  return { id: String(id), title: value.title || "", text: value.text };
}

function jsonlRecords(text, name) {
  const records = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    let value;
    try { value = JSON.parse(line); } catch (error) { throw new Error("line " + (i + 1) + ": not JSON (" + oneLine(error.message) + ")"); }
    const record = checkedRecord(value, "line " + (i + 1), stem(name) + "-" + (i + 1));
    record.where = "line " + (i + 1);
    records.push(record);
  });
  return records;
}

function jsonRecords(text, name) {
  let value;
  try { value = JSON.parse(text); } catch (error) { throw new Error("not JSON (" + oneLine(error.message) + ")"); }
  const list = Array.isArray(value) ? value : value && Array.isArray(value.records) ? value.records : null;
  if (list === null) throw new Error("expected a list of {id, title, text} objects");
  return list.map((item, i) => Object.assign(checkedRecord(item, "record " + (i + 1), stem(name) + "-" + (i + 1)), { where: "record " + (i + 1) }));
}

// The records of a corpus file; an Error naming the line (or record) that is wrong.
function parseCorpus(name, text) {
  const kind = kindOf(name);
  let records;
  if (kind === "jsonl") records = jsonlRecords(text, name);
  else if (kind === "json") records = jsonRecords(text, name);
  else if (kind === "txt") records = [Object.assign(checkedRecord({ id: stem(name), title: stem(name), text }, name, ""), { where: name })];
  else throw new Error("give a .jsonl, .json or .txt file");
  if (!records.length) throw new Error("the file holds no documents");
  const seen = new Map();
  for (const record of records) {
    if (seen.has(record.id)) throw new Error(record.where + ": id \u201c" + record.id + "\u201d already used on " + seen.get(record.id));
    seen.set(record.id, record.where);
  }
  return records.map(({ id, title, text: body }) => ({ id, title, text: body }));
}

function kindOf(name) { return name.toLowerCase().split(".").pop(); }

// A document sent as it is: the server checks its kind by content, converts, splits and indexes it; the
// same file again is left alone, a changed one replaces its passages.
async function uploadDocument(file) {
  $("upload-button").disabled = true;
  $("upload-status").textContent = "indexing " + file.name + "…";
  const outcome = await apiUpload("/index/run", file);
  $("upload-button").disabled = false;
  if (!outcome.ok) {
    $("upload-status").textContent = "";
    const hint = outcome.status === 413 ? " — index it on the command line (haystack run index_files)" : "";
    $("upload-error").textContent = outcome.error + hint;
    return;
  }
  const result = outcome.data.result;
  const state = (result.files || [])[0] || { status: "indexed" };
  const written = result.documents_written;
  $("upload-status").textContent = state.status === "unchanged"
    ? file.name + " is in the store already, unchanged."
    : "Indexed " + file.name + ": " + written + (written === 1 ? " passage" : " passages") + " written.";
  await refreshStore();
}

async function upload() {
  const file = $("upload-file").files[0];
  $("upload-error").textContent = "";
  if (!file) { $("upload-error").textContent = "choose a file first"; return; }
  if (store.files && DOCUMENT_KINDS.includes(kindOf(file.name))) { await uploadDocument(file); return; }
  let records;
  try {
    records = parseCorpus(file.name, await file.text());
  } catch (error) {
    $("upload-error").textContent = file.name + ": " + oneLine(error.message);
    return;
  }
  $("upload-button").disabled = true;
  $("upload-status").textContent = "indexing " + records.length + (records.length === 1 ? " document" : " documents") + "…";
  const outcome = await api("/index/run", { records });
  $("upload-button").disabled = false;
  if (!outcome.ok) {
    $("upload-status").textContent = "";
    const hint = outcome.status === 413 ? " — split the file, or index it on the command line" : "";
    $("upload-error").textContent = outcome.error + hint;
    return;
  }
  const written = outcome.data.result.documents_written;
  $("upload-status").textContent = "Indexed " + file.name + ": " + records.length + (records.length === 1 ? " document, " : " documents, ") +
    written + (written === 1 ? " passage" : " passages") + " written.";
  await refreshStore();
}

function setUpUpload() {
  $("upload-file").addEventListener("change", () => {
    $("upload-button").disabled = !$("upload-file").files.length;
    $("upload-error").textContent = "";
  });
  $("upload-button").addEventListener("click", upload);
}
