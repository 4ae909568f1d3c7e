// Kassa dashboard: passkeys (WebAuthn). A button with data-passkey
// "register" or "login" asks the server for options (data-begin), hands
// them to the browser's authenticator, and posts its answer (data-finish)
// as a form with the page's CSRF token; the answer names the next page.
// A button with data-form instead puts the authenticator's answer in
// that form's "credential" field and submits it: the page it answers
// is the next one.
"use strict";
(function () {
  function bytes(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    return Uint8Array.from(atob(s), function (c) { return c.charCodeAt(0); });
  }
  function text(buf) {
    var s = "";
    new Uint8Array(buf).forEach(function (b) { s += String.fromCharCode(b); });
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function post(url, fields) {
    return fetch(url, { method: "POST", body: new URLSearchParams(fields), credentials: "same-origin" }).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) throw new Error(j.message || String(r.status));
        return j;
      });
    });
  }
  function run(b) {
    var status = document.getElementById("passkey-status");
    var csrf = b.getAttribute("data-csrf");
    var register = b.getAttribute("data-passkey") === "register";
    b.disabled = true;
    post(b.getAttribute("data-begin"), { csrf: csrf }).then(function (o) {
      var pk = o.publicKey;
      pk.challenge = bytes(pk.challenge);
      if (register) {
        pk.user.id = bytes(pk.user.id);
        (pk.excludeCredentials || []).forEach(function (c) { c.id = bytes(c.id); });
        return navigator.credentials.create({ publicKey: pk }).then(function (c) {
          return { id: c.id, rawId: text(c.rawId), type: c.type, response: {
            clientDataJSON: text(c.response.clientDataJSON), attestationObject: text(c.response.attestationObject),
            transports: c.response.getTransports ? c.response.getTransports() : [] } };
        });
      }
      (pk.allowCredentials || []).forEach(function (c) { c.id = bytes(c.id); });
      return navigator.credentials.get({ publicKey: pk }).then(function (c) {
        return { id: c.id, rawId: text(c.rawId), type: c.type, response: {
          clientDataJSON: text(c.response.clientDataJSON), authenticatorData: text(c.response.authenticatorData),
          signature: text(c.response.signature), userHandle: c.response.userHandle ? text(c.response.userHandle) : null } };
      });
    }).then(function (answer) {
      var form = b.getAttribute("data-form");
      if (form) {
        form = document.getElementById(form);
        form.elements.credential.value = JSON.stringify(answer);
        form.submit();
        return new Promise(function () {});
      }
      return post(b.getAttribute("data-finish"), { csrf: csrf, credential: JSON.stringify(answer) });
    }).then(function (done) {
      location.assign(done.redirect);
    }).catch(function (e) {
      b.disabled = false;
      status.textContent = b.getAttribute("data-failed") + " " + e.message;
      status.hidden = false;
    });
  }
  document.querySelectorAll("[data-passkey]").forEach(function (b) {
    b.addEventListener("click", function () { run(b); });
  });
})();
