// "Label in Name" (WCAG 2.5.3), found by axe-core in tests/test_site_browser.py: a few controls of the theme carry
// an aria-label that differs from the text sighted readers see (and speech-input users say). Loaded through
// html_js_files in _config.yml.
(function () {
  "use strict";
  function fix() {
    // The search buttons show "Search Ctrl+K": their visible text is their name.
    document.querySelectorAll("button.search-button__button[aria-label]").forEach(function (button) {
      button.removeAttribute("aria-label");
    });
    // Collapsed code cells show "Show code cell source": the same.
    document.querySelectorAll("details > summary[aria-label]").forEach(function (summary) {
      summary.removeAttribute("aria-label");
    });
    // The colour-mode button shows one icon per mode (Font Awesome turns them into SVGs titled "Light", "Dark",
    // "System Settings" after load): its name says what it does and includes the title of the icon shown.
    document.querySelectorAll("button.theme-switch-button").forEach(function (button) {
      var shown = Array.prototype.filter.call(button.querySelectorAll(".theme-switch"), function (icon) {
        return icon.getClientRects().length > 0;
      })[0];
      var title = shown && (shown.querySelector("title") || shown).textContent.trim();
      var label = title ? "Color mode: " + title : "Color mode";
      if (button.getAttribute("aria-label") !== label) button.setAttribute("aria-label", label);
    });
  }
  var queued = false;
  function schedule() {
    if (queued) return;
    queued = true;
    window.requestAnimationFrame(function () { queued = false; fix(); });
  }
  function start() {
    fix();
    // Re-apply when the theme or Font Awesome rewrites these controls, and when the mode changes.
    new MutationObserver(schedule).observe(document.documentElement, {
      subtree: true, childList: true, attributes: true, attributeFilter: ["data-mode"],
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
