// The ask page's shared helpers: elements, calls to the server, numbers people can read.
// Text from the server is only ever set as text (never parsed as HTML); the API key stays in its input.
"use strict";

const READING = ["bm25", "dense", "search", "qa"];
const LISTS = ["bm25", "dense", "search"];
const SNIPPET = 240;

function $(id) { return document.getElementById(id); }

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function oneLine(text) { return String(text).split("\n")[0].slice(0, 500); }

function apiKey() { return $("api-key").value.trim(); }

function headers(json) {
  const h = json ? { "Content-Type": "application/json" } : {};
  const key = apiKey();
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

// One call: { ok, status, data, error (one line), ms }. A POST sends `body` as JSON.
async function api(path, body) {
  return send(path, body === undefined
    ? { method: "GET", headers: headers(false) }
    : { method: "POST", headers: headers(true), body: JSON.stringify(body) });
}

// POST a file as multipart/form-data (the browser sets its Content-Type, with the boundary).
async function apiUpload(path, file) {
  const form = new FormData();
  form.append("file", file, file.name);
  return send(path, { method: "POST", headers: headers(false), body: form });
}

async function send(path, init) {
  const started = performance.now();
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    return { ok: false, status: 0, error: "could not reach the server", ms: performance.now() - started };
  }
  let data = null;
  try { data = await response.json(); } catch (error) { data = null; }
  const ms = performance.now() - started;
  if (!response.ok) {
    const detail = data && typeof data.detail === "string" ? data.detail : response.statusText;
    return { ok: false, status: response.status, error: oneLine(response.status + ": " + detail), ms };
  }
  return { ok: true, status: response.status, data, ms };
}

function percent(fraction) {
  if (typeof fraction !== "number" || !Number.isFinite(fraction)) return "";
  const share = Math.min(1, Math.max(0, fraction));
  return share > 0 && share < 0.005 ? "<1%" : Math.round(share * 100) + "%";
}

function raw(value) { return typeof value === "number" ? String(Number(value.toPrecision(6))) : String(value); }

// "name value" pairs of the numbers in `meta`, for a tooltip.
function numbers(meta) {
  return Object.entries(meta || {})
    .filter(([, value]) => typeof value === "number")
    .map(([name, value]) => name.replace(/_/g, " ") + " " + raw(value));
}

// Each passage's score relative to the best of its list, 0..1: score/best when all are positive, else min-max.
function relativeScores(documents) {
  const scores = documents.map((d) => (typeof d.score === "number" ? d.score : 0));
  if (!scores.length) return [];
  const best = Math.max(...scores);
  const worst = Math.min(...scores);
  if (worst > 0) return scores.map((s) => s / best);
  if (best === worst) return scores.map(() => 1);
  return scores.map((s) => (s - worst) / (best - worst));
}

function button(text, label, onClick) {
  const node = el("button", "link", text);
  node.type = "button";
  if (label) node.setAttribute("aria-label", label);
  node.addEventListener("click", onClick);
  return node;
}
