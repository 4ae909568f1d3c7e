// Kassa dashboard: posts an authorized application's key back to it at
// once (BTCPay's flow); without script, the page's button does.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var f = document.querySelector("form[data-autosubmit]");
  if (f) f.submit();
});
