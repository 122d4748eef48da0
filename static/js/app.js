// Tidemark console: progressive enhancements only; every page works without it.
document.addEventListener("click", function (e) {
  var button = e.target.closest("[data-copy], [data-copy-text]");
  if (!button || !navigator.clipboard) return;
  var text = button.getAttribute("data-copy-text");
  if (text === null) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    text = source.textContent.trim();
  }
  navigator.clipboard.writeText(text).then(function () {
    var label = button.textContent;
    button.textContent = "Copied";
    setTimeout(function () { button.textContent = label; }, 1500);
  });
});
document.addEventListener("submit", function (e) {
  var message = e.target.getAttribute("data-confirm");
  if (message && !window.confirm(message)) e.preventDefault();
});
// Background refreshes (hx-trigger="every ...") say so, so that they do not
// keep an idle session alive (web/session.go).
document.addEventListener("htmx:configRequest", function (e) {
  if (/^every\s/.test(e.detail.elt.getAttribute("hx-trigger") || "")) e.detail.headers["X-Tidemark-Poll"] = "1";
});
