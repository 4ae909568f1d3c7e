// Kassa's /modal/btcpay.js: the window.btcpay that BTCPay Server's shop
// plugins call for their "modal checkout" option. Kassa's checkout page
// may not be framed (its Content-Security-Policy says frame-ancestors
// 'none'), so showing an invoice opens Kassa's checkout in this window
// instead of an overlay; once the invoice is paid the checkout sends the
// customer back to the shop (the invoice's redirect URL). No frame is
// ever shown, so no frame message (paid, expired, close) is ever passed
// to onModalReceiveMessage.
(function () {
  "use strict";
  if (window.btcpay) { return; }

  // Where invoices are opened: the base URL this script was loaded from
  // (<base>/modal/btcpay.js), or the one given to setApiUrlPrefix.
  var base = "";
  var me = document.currentScript;
  if (me && me.src) {
    base = me.src.replace(/[?#].*$/, "").replace(/\/modal\/btcpay\.js$/, "");
  }

  var willEnter = function () {};

  function setApiUrlPrefix(prefix) {
    prefix = String(prefix || "");
    if (/^https?:\/\//i.test(prefix)) {
      base = prefix.replace(/\/+$/, "");
    }
  }

  // openInvoice leaves this page for the invoice's checkout
  // (<base>/i/<id>); params (a payment method, entrance animation) are
  // BTCPay's overlay options and have no meaning here.
  function openInvoice(invoiceId) {
    if (invoiceId === undefined || invoiceId === null || String(invoiceId) === "") { return; }
    try { willEnter(); } catch (e) { /* the shop's callback must not stop the checkout */ }
    window.location.assign(base + "/i/" + encodeURIComponent(String(invoiceId)));
  }

  function nothing() {}

  window.btcpay = {
    setApiUrlPrefix: setApiUrlPrefix,
    showInvoice: openInvoice,
    appendInvoiceFrame: openInvoice,
    appendAndShowInvoiceFrame: openInvoice,
    showFrame: nothing,
    hideFrame: nothing,
    onModalWillEnter: function (f) { if (typeof f === "function") { willEnter = f; } },
    // No frame: nothing is left and no message arrives, so these
    // callbacks are accepted and never called.
    onModalWillLeave: nothing,
    onModalReceiveMessage: nothing
  };
})();
