// "Label in Name" (WCAG 2.5.3), found by axe-core in tests/e2e/test_site_browser.py: a few controls of the theme carry
// an aria-label that differs from the text sighted readers see (and speech-input users say). Loaded through
// html_js_files in _config.yml (deferred, as every page script: book/_ext/site_assets.py).
// It only reads attributes and text, never layout, so it costs the page no style or layout work.
(function () {
  "use strict";
  // What the colour-mode button shows in each mode (the theme's titles for its three icons).
  var MODE_TITLES = { light: "Light", dark: "Dark", auto: "System Settings" };

  function labelModeButtons() {
    var title = MODE_TITLES[document.documentElement.dataset.mode];
    var label = title ? "Color mode: " + title : "Color mode";
    document.querySelectorAll("button.theme-switch-button").forEach(function (button) {
      if (button.getAttribute("aria-label") !== label) button.setAttribute("aria-label", label);
    });
  }

  function start() {
    // The search field button shows "Search Ctrl+K": its visible text is its name. (The icon-only search button
    // of the header has no text: it keeps its aria-label.)
    document.querySelectorAll("button.search-button__button[aria-label]").forEach(function (button) {
      if (button.textContent.trim()) button.removeAttribute("aria-label");
    });
    // Collapsed code cells show "Show code cell source": the same.
    document.querySelectorAll("details > summary[aria-label]").forEach(function (summary) {
      summary.removeAttribute("aria-label");
    });
    labelModeButtons();
    // The theme switches mode by setting <html data-mode>.
    new MutationObserver(labelModeButtons).observe(document.documentElement, {
      attributes: true, attributeFilter: ["data-mode"],
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
