"""The console's one stylesheet and one script, served from its own address (the CSP allows
nothing else). The script only adds to pages that work without it: the live update of the
waiting approvals (server-sent events) and the confirmation as a dialog instead of a page.
Every text it shows comes from the page (data attributes, elements) or the server's event,
set as ``textContent``, never as HTML.
"""

from __future__ import annotations

CSS = """\
:root { color-scheme: light dark; --bg: #fff; --fg: #1b1b1b; --muted: #555; --line: #ccc;
  --card: #f6f6f6; --accent: #0b57d0; --ok: #0a6b2d; --bad: #a50e0e; --warn-bg: #fff4d6; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #141414; --fg: #ececec; --muted: #aaa; --line: #444; --card: #1f1f1f;
    --accent: #8ab4f8; --ok: #7dd89a; --bad: #f28b82; --warn-bg: #3a3000; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 16px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; }
.skip:focus { left: 8px; top: 8px; background: var(--bg); padding: 4px 8px; z-index: 2; }
header { border-bottom: 1px solid var(--line); padding: 8px 16px; display: flex; flex-wrap: wrap;
  gap: 4px 16px; align-items: center; }
.brand { margin: 0; font-weight: 600; }
nav ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 14px; }
main { padding: 12px 16px 40px; max-width: 1100px; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin: 0 0 8px; } h3 { font-size: 1rem; margin: 14px 0 6px; }
.muted { color: var(--muted); font-weight: normal; }
.approval { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px;
  margin: 12px 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
td { overflow-wrap: anywhere; font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .9rem; }
table.fields td:nth-child(2) { white-space: nowrap; }
table.fields td:first-child { overflow-wrap: break-word; }  /* a field's name whole where it fits */
.untrusted { border-left: 4px solid #c58a00; padding-left: 8px; }
h3.untrusted { font-weight: 600; }
.warn { background: var(--warn-bg); padding: 4px 8px; }
.actions { display: flex; flex-wrap: wrap; gap: 8px; margin-top: 12px; }
button { font: inherit; padding: 8px 16px; border-radius: 6px; border: 1px solid var(--line);
  background: var(--bg); color: var(--fg); cursor: pointer; min-height: 44px; }
button.approve { background: var(--ok); color: #fff; border-color: var(--ok); }
button.reject { background: var(--bad); color: #fff; border-color: var(--bad); }
@media (prefers-color-scheme: dark) { button.approve, button.reject { color: #111; } }
textarea, input, select { font: inherit; max-width: 100%; padding: 6px; background: var(--bg); color: var(--fg);
  border: 1px solid var(--line); border-radius: 4px; }
textarea { width: 100%; }
.refused { color: var(--bad); font-weight: 600; }
.verdict.ok { color: var(--ok); font-weight: 600; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: .85rem; background: var(--card);
  padding: 8px; border: 1px solid var(--line); }
fieldset { border: 1px solid var(--line); display: flex; flex-wrap: wrap; gap: 8px; align-items: end; }
dialog { max-width: min(560px, 94vw); background: var(--bg); color: var(--fg); border: 1px solid var(--line);
  border-radius: 8px; }
dialog::backdrop { background: rgba(0, 0, 0, .5); }
#live p { margin: 4px 0; font-weight: 600; }
"""

JS = """\
"use strict";
(function () {
  var dialog = document.getElementById("confirm");
  var shown = function () {
    return Array.prototype.map.call(document.querySelectorAll("article.approval"),
      function (a) { return a.dataset.approval; });
  };
  var say = function (text) {
    var live = document.getElementById("live");
    if (!live) { return; }
    var p = document.createElement("p");
    p.textContent = text;
    live.appendChild(p);
  };
  if (dialog && typeof dialog.showModal === "function") {
    var form = document.getElementById("confirm-form");
    var open = null;
    document.querySelectorAll("form.decide").forEach(function (f) {
      f.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var card = f.closest("article.approval");
        var verb = f.dataset.verb;
        var d = card.dataset;
        ["run", "approval", "hash"].forEach(function (n) { form.elements[n].value = f.elements[n].value; });
        form.elements.verb.value = verb;
        var approve = verb === "approve";
        document.getElementById("confirm-title").textContent = approve ? d.confirmTitle : d.rejectTitle;
        document.getElementById("confirm-text").textContent = approve ? d.confirmText : d.rejectText;
        var list = document.getElementById("confirm-payees");
        list.textContent = "";
        if (approve) {
          d.payees.split("\\n").forEach(function (line) {
            var li = document.createElement("li");
            li.textContent = line;
            list.appendChild(li);
          });
        }
        var note = document.getElementById("confirm-note");
        note.value = "";
        note.required = !approve;
        document.getElementById("confirm-note-box").hidden = approve;
        var yes = document.getElementById("confirm-yes");
        yes.textContent = approve ? d.confirmYes : d.rejectYes;
        yes.className = verb;
        open = d.approval;
        dialog.showModal();
        (approve ? yes : note).focus();
      });
    });
    document.getElementById("confirm-cancel").addEventListener("click", function () { dialog.close(); });
    dialog.addEventListener("close", function () { open = null; });
  }
  if (document.body.hasAttribute("data-live") && typeof EventSource === "function") {
    document.getElementById("live-note").hidden = true;
    document.getElementById("live-on").hidden = false;
    var source = new EventSource("/events?shown=" + encodeURIComponent(shown().join(",")));
    source.addEventListener("message", function (ev) {
      var change = JSON.parse(ev.data);
      Object.keys(change.gone || {}).forEach(function (id) {
        var card = document.getElementById("approval-" + id);
        if (!card) { return; }  // gone before, or told already (the stream reconnected)
        card.remove();
        if (dialog && dialog.open && open === id) { dialog.close(); }
        say(change.gone[id]);
      });
      var mine = shown();
      var fresh = (change.pending || []).filter(function (id) { return mine.indexOf(id) < 0; });
      if (fresh.length) {
        if (dialog && dialog.open) {
          document.getElementById("new-arrived").hidden = false;
        } else {
          source.close();
          window.location.reload();
        }
      }
    });
  }
})();
"""
