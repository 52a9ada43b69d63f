// The console's live figures: poll the JSON of the queues' stats and the redrive progress,
// update the page in place. Pages work without it; it only keeps them current.
"use strict";

function age(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  const s = Math.floor(seconds);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
}

function size(bytes) {
  // As the server's size filter writes it.
  for (const [unit, scale] of [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]]) {
    if (bytes >= scale) return (bytes / scale).toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 }) + " " + unit;
  }
  return bytes.toLocaleString("en-US") + " bytes";
}

function show(cell, value) {
  const kind = cell.dataset.kind;
  const text = value === null || value === undefined ? (kind === "age" ? age(value) : "-") : kind === "age" ? age(value) : kind === "size" ? size(value) : value.toLocaleString("en-US");
  if (cell.textContent !== text) cell.textContent = text;
}

// Set once a form is sent: the page is leaving for the form's answer, which a poll's reload
// (its queue gone after a delete it just sent) would cut short.
let leaving = false;
document.addEventListener("submit", () => { leaving = true; }, true);

async function refreshStats(page) {
  // A queue page asks for its own queue's figures: counting every queue's would cost as much as the largest.
  const src = page === "queue" ? "/console/api/stats?queue=" + encodeURIComponent(document.body.dataset.queue) : "/console/api/stats";
  const response = await fetch(src, { headers: { Accept: "application/json" } });
  if (!response.ok) return;
  const data = await response.json();
  // Each poll brings a fresh form token: a page left open keeps forms the server accepts.
  for (const input of document.querySelectorAll('input[name="token"]')) input.value = data.token;
  const byName = new Map(data.queues.map((q) => [q.name, q]));
  if (leaving) return;
  if (page === "queue" && !byName.has(document.body.dataset.queue)) {
    location.reload(); // the queue was deleted: the server's page says so, instead of its last figures
    return;
  }
  if (page === "index") {
    const shown = [...document.querySelectorAll("tr[data-queue]")].map((r) => r.dataset.queue);
    if (shown.length !== byName.size || shown.some((n) => !byName.has(n))) {
      location.reload(); // a queue came or went
      return;
    }
  }
  for (const holder of document.querySelectorAll("[data-queue]")) {
    const q = byName.get(holder.dataset.queue);
    if (!q || holder.tagName === "BODY") continue;
    for (const cell of holder.querySelectorAll("[data-figure]")) show(cell, q[cell.dataset.figure]);
  }
  if (data.file) for (const cell of document.querySelectorAll("[data-file]")) show(cell, data.file[cell.dataset.file]);
  const updated = document.getElementById("updated");
  if (updated) updated.textContent = "updated " + new Date().toLocaleTimeString();
}

async function refreshTasks() {
  const box = document.getElementById("tasks");
  if (!box) return;
  const response = await fetch(box.dataset.src);
  if (response.ok) box.innerHTML = await response.text(); // rendered and escaped by the server
}

function start() {
  const page = document.body.dataset.page;
  if (!page) return;
  const every = (Number(document.body.dataset.refresh) || 3) * 1000;
  const tick = async () => {
    if (!document.hidden) {
      try {
        await refreshStats(page);
        if (page === "queue") await refreshTasks();
      } catch (e) {
        // The server is restarting or gone; try again at the next tick.
      }
    }
    setTimeout(tick, every);
  };
  setTimeout(tick, every);
}

document.addEventListener("DOMContentLoaded", start);
