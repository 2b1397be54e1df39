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
// Full-width digits typed with a Japanese input method become the ASCII digits the code needs.
document.addEventListener("input", function (event) {
  var input = event.target;
  if (!input.matches || !input.matches("input[autocomplete=one-time-code]")) return;
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
// Uploads with a progress bar. Without JavaScript the form posts as usual.
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (!form.matches || !form.matches("form[data-upload]") || !window.XMLHttpRequest || !window.FormData) return;
  event.preventDefault();
  var progress = document.getElementById("upload-progress");
  var status = document.getElementById("upload-status");
  var button = form.querySelector("button[type=submit]");
  var xhr = new XMLHttpRequest();
  xhr.open("POST", form.action);
  xhr.upload.addEventListener("progress", function (e) {
    if (!e.lengthComputable) return;
    var percent = Math.floor((e.loaded / e.total) * 100);
    progress.hidden = false;
    progress.value = percent;
    status.textContent = percent + "%";
  });
  xhr.addEventListener("load", function () {
    // The answer is a whole page (the link, or the form with an error): show it.
    document.open();
    document.write(xhr.responseText);
    document.close();
  });
  xhr.addEventListener("error", function () {
    button.disabled = false;
    status.textContent = "";
  });
  button.disabled = true;
  if (button.getAttribute("data-uploading")) button.textContent = button.getAttribute("data-uploading");
  xhr.send(new FormData(form));
});
