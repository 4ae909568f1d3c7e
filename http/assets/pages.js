// The customer pages' script (checkout and pay link). It is served from
// this origin; the pages carry no inline script. What it adds to a page
// that works without it: copy buttons, tabs without a reload, a live
// countdown, the state redrawn in place as the payment arrives (polling
// the small status endpoint), the automatic return to the shop, the
// simulation buttons, and times in the reader's own zone (the server
// writes them in UTC with the zone named).
(function () {
  "use strict";
  var live = document.getElementById("live");

  // Copy buttons: shown only when this script runs.
  function wireCopy(root) {
    Array.prototype.forEach.call(root.querySelectorAll("button.copy"), function (b) {
      b.hidden = false;
      b.addEventListener("click", function () {
        var el = document.getElementById(b.getAttribute("data-copy"));
        if (!el) { return; }
        var text = el.textContent, label = b.textContent;
        function done(ok) {
          b.textContent = ok ? b.getAttribute("data-copied") : b.getAttribute("data-failed");
          setTimeout(function () { b.textContent = label; }, 1500);
        }
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(text).then(function () { done(true); }, function () { select(el); done(false); });
        } else {
          select(el);
          done(false);
        }
      });
    });
  }
  function select(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  // Tabs: switch in place, arrow keys move between them.
  var currentTab = null;
  function wireTabs(root) {
    var tabs = Array.prototype.slice.call(root.querySelectorAll('[role="tab"]'));
    function show(tab, focus) {
      tabs.forEach(function (t) {
        var on = t === tab;
        t.setAttribute("aria-selected", on ? "true" : "false");
        t.tabIndex = on ? 0 : -1;
        var panel = document.getElementById(t.getAttribute("aria-controls"));
        if (panel) { panel.hidden = !on; }
      });
      currentTab = tab.id.replace(/^tab-/, "");
      if (focus) { tab.focus(); }
    }
    tabs.forEach(function (t, i) {
      t.tabIndex = t.getAttribute("aria-selected") === "true" ? 0 : -1;
      t.addEventListener("click", function (e) { e.preventDefault(); show(t, false); });
      t.addEventListener("keydown", function (e) {
        var next = null;
        // Right to left, the next tab is the one on the left.
        var forward = document.documentElement.dir === "rtl" ? "ArrowLeft" : "ArrowRight";
        var back = forward === "ArrowRight" ? "ArrowLeft" : "ArrowRight";
        if (e.key === forward) { next = tabs[(i + 1) % tabs.length]; }
        if (e.key === back) { next = tabs[(i + tabs.length - 1) % tabs.length]; }
        if (e.key === "Home") { next = tabs[0]; }
        if (e.key === "End") { next = tabs[tabs.length - 1]; }
        if (next) { e.preventDefault(); show(next, true); }
      });
    });
  }

  // Times: each <time data-local> holds its instant in UTC, written out
  // with the zone named; here it becomes the reader's local time, in the
  // page's language ("2026-11-25 22:44" in English, "25.11.2026, 22:44"
  // in German), with the reader's zone named (its IANA name, else the
  // offset). Hovering shows the UTC time it replaced.
  function two(n) { return ("0" + n).slice(-2); }
  function zoneName(d) {
    var zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
    if (zone === "UTC" || zone === "Etc/UTC" || zone === "Etc/GMT") { return "UTC"; }
    if (zone) { return zone.replace(/_/g, " "); }
    var off = -d.getTimezoneOffset();
    return "UTC" + (off < 0 ? "-" : "+") + two(Math.floor(Math.abs(off) / 60)) + ":" + two(Math.abs(off) % 60);
  }
  function localTimes(root) {
    var lang = document.documentElement.lang;
    var de = lang === "de";
    var cldr = null;
    // Languages other than English and German: the browser's CLDR
    // medium date and short time (Intl), as the server writes them.
    if (lang !== "en" && !de) {
      try { cldr = new Intl.DateTimeFormat(lang, {dateStyle: "medium", timeStyle: "short"}); } catch (e) { cldr = null; }
    }
    Array.prototype.forEach.call(root.querySelectorAll("time[data-local]"), function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d.getTime())) { return; }
      var date = de ? two(d.getDate()) + "." + two(d.getMonth() + 1) + "." + d.getFullYear() + ","
        : d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate());
      el.title = el.textContent;
      el.textContent = cldr ? cldr.format(d) + " " + zoneName(d)
        : date + " " + two(d.getHours()) + ":" + two(d.getMinutes()) + " " + zoneName(d);
      el.removeAttribute("data-local");
    });
  }

  wireCopy(document);
  wireTabs(document);
  localTimes(document);
  if (!live) { return; }

  var statusURL = live.getAttribute("data-status");
  var open = {waiting: true, underpaid: true, seen: true};
  var redirecting = false;

  // The countdown, from the seconds left when the page was made (the
  // customer's clock may be wrong; the monotonic one is not).
  var countdown = document.getElementById("countdown");
  if (countdown) {
    var deadline = performance.now() + 1000 * Number(countdown.getAttribute("data-remaining"));
    var tick = function () {
      var value = document.getElementById("countdown-value");
      var left = Math.max(0, Math.round((deadline - performance.now()) / 1000));
      if (!open[live.getAttribute("data-state")] || live.getAttribute("data-state") === "seen") {
        countdown.hidden = true;
        return;
      }
      if (left === 0) {
        value.textContent = countdown.getAttribute("data-expired");
        countdown.classList.add("over");
        poll(true);
        return;
      }
      value.textContent = Math.floor(left / 60) + ":" + ("0" + left % 60).slice(-2);
      setTimeout(tick, 1000);
    };
    tick();
  }

  function maybeRedirect() {
    var to = live.getAttribute("data-redirect");
    if (to && !redirecting) {
      redirecting = true;
      setTimeout(function () { location.href = to; }, 2500);
    }
  }

  // Redraw: fetch the live part of this page again (same language and
  // tab) and take its state and details.
  function redraw() {
    var q = new URLSearchParams(location.search);
    if (currentTab) { q.set("tab", currentTab); }
    q.set("part", "live");
    return fetch(location.pathname + "?" + q.toString(), {cache: "no-store", credentials: "same-origin"})
      .then(function (r) { if (!r.ok) { throw new Error("page " + r.status); } return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live");
        if (!fresh) { return; }
        ["data-key", "data-state", "data-redirect"].forEach(function (a) {
          if (fresh.hasAttribute(a)) { live.setAttribute(a, fresh.getAttribute(a)); } else { live.removeAttribute(a); }
        });
        ["state", "details"].forEach(function (id) {
          var mine = document.getElementById(id), theirs = doc.getElementById(id);
          if (mine && theirs) {
            mine.className = theirs.className;
            mine.replaceChildren.apply(mine, Array.prototype.map.call(theirs.childNodes, function (n) { return document.importNode(n, true); }));
          }
        });
        var details = document.getElementById("details");
        wireCopy(details);
        wireTabs(details);
        localTimes(details);
        var state = live.getAttribute("data-state");
        if (!(state === "waiting" || state === "underpaid")) {
          if (countdown) { countdown.hidden = true; }
          // Nothing is left to pay: the simulation's pay buttons go (a
          // click would be refused); "mine" stays for confirmations.
          Array.prototype.forEach.call(document.querySelectorAll(".simctl button[data-sim^='pay']"), function (b) { b.remove(); });
        }
        maybeRedirect();
      });
  }

  var timer = null;
  function poll(now) {
    clearTimeout(timer);
    timer = setTimeout(function () {
      fetch(statusURL, {cache: "no-store"})
        .then(function (r) { if (!r.ok) { throw new Error("status " + r.status); } return r.json(); })
        .then(function (s) {
          var next = s.key !== live.getAttribute("data-key") ? redraw() : Promise.resolve();
          return next.then(function () { if (open[live.getAttribute("data-state")]) { poll(false); } });
        })
        .catch(function () { timer = setTimeout(function () { poll(false); }, 5000); });
    }, now ? 0 : 2000);
  }

  // Simulation buttons.
  var sim = document.querySelector(".simctl");
  if (sim) {
    Array.prototype.forEach.call(sim.querySelectorAll("button[data-sim]"), function (b) {
      b.addEventListener("click", function () {
        var out = document.getElementById("sim-result");
        b.disabled = true;
        fetch(location.pathname.replace(/\/$/, "") + "/sim/" + b.getAttribute("data-sim"), {method: "POST"})
          .then(function (r) { return r.json().then(function (j) { return {ok: r.ok, j: j}; }); })
          .then(function (res) {
            var j = res.j;
            if (!res.ok) { out.textContent = sim.getAttribute("data-failed") + (j.message || ""); }
            else if (j.height) { out.textContent = sim.getAttribute("data-mined") + j.height; }
            else { out.textContent = sim.getAttribute("data-paid") + j.txid; }
            poll(true);
          }, function (e) { out.textContent = sim.getAttribute("data-failed") + e.message; })
          .then(function () { setTimeout(function () { b.disabled = false; }, 300); });
      });
    });
  }

  if (open[live.getAttribute("data-state")]) { poll(false); }
  maybeRedirect();
})();
