// tinyjudge label: keyboard-driven labelling. No framework, no build step.
// HTML fragments come from the server, already escaped; this script only inserts them.
(function () {
  "use strict";
  const body = document.body;
  const itemId = body.dataset.itemId || "";
  const $ = (sel) => document.querySelector(sel);
  const options = Array.from(document.querySelectorAll("button.option"));
  const note = $("#note");
  const confirmBtn = $("#confirm");
  const statusEl = $("#status");
  let picked = null;
  let answered = false;
  let busy = false;

  function say(text, isError) {
    if (!statusEl) return;
    statusEl.textContent = text;
    statusEl.classList.toggle("error", !!isError);
  }

  async function post(path, payload) {
    const resp = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(payload || {}),
      credentials: "same-origin",
    });
    let data = null;
    try { data = await resp.json(); } catch (e) { data = null; }
    if (!resp.ok) {
      throw new Error((data && data.error) || ("HTTP " + resp.status));
    }
    return data;
  }

  function pick(i) {
    if (answered || i < 0 || i >= options.length) return;
    picked = options[i].dataset.label;
    options.forEach((b, j) => b.classList.toggle("picked", j === i));
    options.forEach((b, j) => b.setAttribute("aria-pressed", j === i ? "true" : "false"));
    if (confirmBtn) confirmBtn.disabled = false;
    say("Picked " + picked + ": Enter to confirm");
  }

  async function confirmAnswer() {
    if (busy || answered || picked === null) return;
    busy = true;
    try {
      const data = await post("/api/answer", { item_id: itemId, label: picked, note: note ? note.value : "" });
      answered = true;
      body.classList.add("answered");
      options.forEach((b) => { b.disabled = true; });
      if (note) { note.disabled = true; note.blur(); }
      if (confirmBtn) confirmBtn.disabled = true;
      $("#verdicts").innerHTML = data.verdicts_html;
      $("#progress-body").innerHTML = data.progress_html;
      const count = $("#count");
      if (count) {
        const p = data.progress;
        count.textContent = p.labelled + (p.budget ? " / " + p.budget : "") + " labelled";
      }
      $("#reveal").hidden = false;
      $("#next").focus();
      say("Saved.");
    } catch (e) {
      say("Not saved: " + e.message, true);
    } finally {
      busy = false;
    }
  }

  async function skip() {
    if (busy || answered || !itemId) return;
    busy = true;
    try {
      await post("/api/skip", { item_id: itemId });
      location.reload();
    } catch (e) {
      say("Not skipped: " + e.message, true);
      busy = false;
    }
  }

  async function undo() {
    if (busy) return;
    busy = true;
    try {
      const data = await post("/api/undo", {});
      if (!data.undone) { say("Nothing to undo."); busy = false; return; }
      location.reload();
    } catch (e) {
      say("Undo failed: " + e.message, true);
      busy = false;
    }
  }

  function next() { location.reload(); }

  // J/K move between messages, so a long transcript can be read without the mouse.
  const messages = Array.from(document.querySelectorAll(".transcript .msg, .pair .msg"));
  let focusIdx = -1;
  function moveMessage(delta) {
    if (!messages.length) return;
    focusIdx = Math.max(0, Math.min(messages.length - 1, focusIdx + delta));
    messages.forEach((m, j) => m.classList.toggle("focused", j === focusIdx));
    messages[focusIdx].scrollIntoView({ block: "center" });
  }

  options.forEach((b, i) => b.addEventListener("click", () => pick(i)));
  if (confirmBtn) confirmBtn.addEventListener("click", confirmAnswer);
  const skipBtn = $("#skip");
  if (skipBtn) skipBtn.addEventListener("click", skip);
  const undoBtn = $("#undo");
  if (undoBtn) undoBtn.addEventListener("click", undo);
  const nextBtn = $("#next");
  if (nextBtn) nextBtn.addEventListener("click", next);

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const inNote = ev.target === note;
    if (inNote) {
      // Typing a note: only Enter (confirm) and Escape (leave the field) are shortcuts.
      if (ev.key === "Enter") { ev.preventDefault(); confirmAnswer(); }
      else if (ev.key === "Escape") { note.blur(); }
      return;
    }
    if (ev.target && ev.target.tagName === "TEXTAREA") return;
    const key = ev.key;
    if (key >= "1" && key <= "9") { pick(Number(key) - 1); ev.preventDefault(); return; }
    if (key === "Enter") {
      ev.preventDefault();
      if (answered) next(); else confirmAnswer();
      return;
    }
    const k = key.toLowerCase();
    if (k === "s") { ev.preventDefault(); skip(); }
    else if (k === "u") { ev.preventDefault(); undo(); }
    else if (k === "n" && answered) { ev.preventDefault(); next(); }
    else if (k === "j") { ev.preventDefault(); moveMessage(1); }
    else if (k === "k") { ev.preventDefault(); moveMessage(-1); }
  });
})();
