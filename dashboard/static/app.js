// Kassa dashboard: copy buttons and confirmations. Everything works
// without this script except copying to the clipboard.
"use strict";
document.addEventListener("click", function (e) {
  var b = e.target.closest("[data-copy]");
  if (!b) return;
  var text = b.getAttribute("data-copy");
  var done = function () {
    var old = b.textContent;
    b.textContent = b.getAttribute("data-copied") || "Copied";
    setTimeout(function () { b.textContent = old; }, 1500);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, function () {});
  } else {
    var t = document.createElement("textarea");
    t.value = text;
    t.setAttribute("readonly", "");
    document.body.appendChild(t);
    t.select();
    try { document.execCommand("copy"); done(); } catch (err) {}
    document.body.removeChild(t);
  }
});
document.addEventListener("submit", function (e) {
  var q = e.target.getAttribute("data-confirm");
  if (q && !window.confirm(q)) e.preventDefault();
});
