// Small enhancements that pages work without. No inline scripts: the CSP forbids them.
"use strict";
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-copy]");
  if (!button || !navigator.clipboard) return;
  var source = document.getElementById(button.getAttribute("data-copy"));
  if (!source) return;
  navigator.clipboard.writeText(source.value || source.textContent).then(function () {
    var done = button.getAttribute("data-copied");
    if (done) button.textContent = done;
  });
});
// Move focus into the step that was just swapped in, so the number pad opens on the code step and
// screen readers read the new step. (For an outerHTML swap the event's target is the old element.)
document.addEventListener("htmx:afterSettle", function () {
  var step = document.getElementById("step");
  if (!step) return;
  var focus = step.querySelector("[data-autofocus]") || step.querySelector("h1, h2");
  if (!focus) return;
  if (!/^(INPUT|BUTTON|A|SELECT|TEXTAREA)$/.test(focus.tagName)) focus.setAttribute("tabindex", "-1");
  focus.focus();
});
// In a field that asks for digits only (`data-digits`: the numeric codes, not the recovery codes),
// full-width digits typed with a Japanese input method become ASCII digits and the rest is dropped.
document.addEventListener("input", function (event) {
  var input = event.target;
  if (!input.matches || !input.matches("input[data-digits]")) return;
  var ascii = input.value.replace(/[\uFF10-\uFF19]/g, function (d) {
    return String.fromCharCode(d.charCodeAt(0) - 0xFF10 + 48);
  }).replace(/[^0-9]/g, "");
  if (ascii !== input.value) input.value = ascii;
});
// After the one-time download starts, say so: the page itself does not change.
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (!form.matches || !form.matches("form[data-download]")) return;
  var note = document.getElementById("download-started");
  window.setTimeout(function () {
    if (note) note.hidden = false;
    var button = form.querySelector("button");
    if (button) button.disabled = true;
  }, 0);
});
// The browser's time zone: sign-in forms send it (an account without a zone adopts it), and the
// account page offers it when none is chosen yet.
document.addEventListener("DOMContentLoaded", function () {
  var zone;
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
  if (!zone) return;
  document.querySelectorAll("input[data-browser-time-zone]").forEach(function (input) { input.value = zone; });
  document.querySelectorAll("select[data-browser-time-zone]").forEach(function (select) {
    var offered = Array.prototype.some.call(select.options, function (option) { return option.value === zone; });
    if (!offered || select.value !== "") return;
    select.value = zone;
    var note = document.getElementById("time-zone-from-browser");
    if (note) note.hidden = false;
  });
});
// A polling part of a page (the share page's status and timeline) asks nothing while its tab is
// hidden; the poll after the tab is shown again catches up.
document.addEventListener("htmx:beforeRequest", function (event) {
  var source = event.detail && event.detail.elt;
  if (document.visibilityState === "hidden" && source && source.hasAttribute && source.hasAttribute("data-poll")) {
    event.preventDefault();
  }
});
