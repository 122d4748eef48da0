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
// A phone shows every table as cards (app.css): each cell is labelled with
// its column's heading, unless the markup labels it already.
function labelCells() {
  document.querySelectorAll("table").forEach(function (table) {
    var names = [];
    table.querySelectorAll("thead tr:first-child th").forEach(function (th) {
      for (var i = 0; i < th.colSpan; i++) names.push(th.textContent.trim());
    });
    if (!names.length) return;
    table.querySelectorAll("tbody tr, tfoot tr").forEach(function (tr) {
      var col = 0;
      for (var c = tr.firstElementChild; c; c = c.nextElementSibling) {
        var name = names[col];
        col += c.colSpan;
        if (name && c.colSpan === 1 && !c.hasAttribute("data-label")) c.setAttribute("data-label", name);
      }
    });
  });
}
labelCells();
document.addEventListener("htmx:afterSwap", labelCells);
