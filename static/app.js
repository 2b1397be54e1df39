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
// Move focus to swapped content so screen readers announce the new step.
document.addEventListener("htmx:afterSwap", function (event) {
  var focus = event.detail.target.querySelector("[data-autofocus]") || event.detail.target.querySelector("h1, h2");
  if (focus) {
    if (!focus.hasAttribute("tabindex") && !/^(INPUT|BUTTON|A|SELECT|TEXTAREA)$/.test(focus.tagName)) {
      focus.setAttribute("tabindex", "-1");
    }
    focus.focus();
  }
});
