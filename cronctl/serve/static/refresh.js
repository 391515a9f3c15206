// Every page keeps itself current: while the tab is visible it asks the server for the
// same page's main part every INTERVAL (header X-Cronctl-Live: 1, rendered without the
// header and footer) and swaps in each element marked data-live that has an id. Forms
// outside those elements (search, "why", replay) are never touched while you type. A
// hidden tab asks for nothing; it catches up once when it becomes visible again. Failed
// requests back off up to two minutes. Relative times ("in 15s", "2m ago") tick every
// second in between. The jobs page's search and state filter also apply as you type.
// Without JavaScript the pages are the same, minus all of this: reload them.
(function () {
  "use strict";
  var INTERVAL = 10000;
  var MAX_BACKOFF = 120000;
  var note = document.getElementById("refresh-note");
  var live = document.querySelectorAll("[data-live][id]").length > 0;
  var timer = null;
  var busy = false;
  var failures = 0;
  var last = Date.now();
  var stopped = false;

  function say(text) { if (note) { note.textContent = text ? " \u00b7 " + text : ""; } }

  function clock(d) {
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return two(d.getUTCHours()) + ":" + two(d.getUTCMinutes()) + ":" + two(d.getUTCSeconds()) + "Z";
  }

  function relative(iso, now) {
    var seconds = Math.round((Date.parse(iso) - now) / 1000);
    if (isNaN(seconds)) { return null; }
    if (Math.abs(seconds) < 2) { return "just now"; }
    var left = Math.abs(seconds);
    var parts = [];
    var units = [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];
    for (var i = 0; i < units.length && parts.length < 2; i++) {
      if (left >= units[i][1] || (units[i][0] === "s" && !parts.length)) {
        parts.push(Math.floor(left / units[i][1]) + units[i][0]);
        left %= units[i][1];
      }
    }
    return seconds > 0 ? "in " + parts.join(" ") : parts.join(" ") + " ago";
  }

  function tickTimes() {
    var now = Date.now();
    document.querySelectorAll("time[data-rel][datetime]").forEach(function (el) {
      var text = relative(el.getAttribute("datetime"), now);
      if (text && el.textContent !== text) { el.textContent = text; }
    });
  }

  // --- the jobs page's filter, applied as you type (the form also works as a GET) ---
  var form = document.getElementById("job-filter");
  var query = document.getElementById("q");
  var state = document.getElementById("state");

  function filterRows() {
    if (!form) { return; }
    var q = (query.value || "").trim().toLowerCase();
    var s = state.value;
    var shown = 0;
    var rows = document.querySelectorAll("li.job[data-state]");
    rows.forEach(function (row) {
      var ok = (!q || (row.dataset.search || "").indexOf(q) >= 0) &&
               (!s || row.dataset.state === s);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    var count = document.getElementById("jobs-count");
    if (count) {
      var total = count.dataset.total;
      count.textContent = shown === Number(total) ? total : shown + " of " + total;
    }
  }

  function remember() {
    if (!form) { return; }
    var params = new URLSearchParams();
    if (query.value.trim()) { params.set("q", query.value.trim()); }
    if (state.value) { params.set("state", state.value); }
    var search = params.toString();
    // the URL says what is shown: a reload, a shared link and the next refresh agree
    history.replaceState(null, "", location.pathname + (search ? "?" + search : "") + location.hash);
    filterRows();
    // rows the server left out (an earlier filter) come back with a refresh soon after
    if (live && !stopped) { schedule(400); }
  }

  if (form) {
    query.addEventListener("input", remember);
    state.addEventListener("change", remember);
  }

  // --- the refresh ---
  function schedule(ms) {
    window.clearTimeout(timer);
    timer = window.setTimeout(refresh, ms);
  }

  function swap(doc) {
    document.querySelectorAll("[data-live][id]").forEach(function (old) {
      var fresh = doc.getElementById(old.id);
      if (!fresh) { return; }
      var focused = document.activeElement;
      var keep = focused && old.contains(focused) && focused.id ? focused.id : null;
      old.replaceWith(document.importNode(fresh, true));
      if (keep) {
        var again = document.getElementById(keep);
        if (again) { again.focus(); }
      }
    });
    filterRows();
    tickTimes();
  }

  function refresh() {
    if (stopped || busy || document.visibilityState !== "visible") { return; }
    busy = true;
    fetch(location.pathname + location.search, {
      headers: {"X-Cronctl-Live": "1", "Accept": "text/html"},
      credentials: "same-origin", cache: "no-store", redirect: "manual"})
      .then(function (response) {
        if (response.type === "opaqueredirect" || response.status === 401) {
          stopped = true;
          throw new Error("signed out: reload the page to log in again");
        }
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        swap(new DOMParser().parseFromString(html, "text/html"));
        failures = 0;
        last = Date.now();
        say("updated " + clock(new Date(last)));
        schedule(INTERVAL);
      })
      .catch(function (error) {
        failures += 1;
        say(error.message + (stopped ? "" : "; retrying"));
        if (!stopped) { schedule(Math.min(INTERVAL * Math.pow(2, failures), MAX_BACKOFF)); }
      })
      .then(function () { busy = false; });
  }

  document.addEventListener("visibilitychange", function () {
    if (!live) { return; }
    if (document.visibilityState !== "visible") {
      window.clearTimeout(timer);  // nothing while hidden
      return;
    }
    var waited = Date.now() - last;
    schedule(waited >= INTERVAL ? 0 : INTERVAL - waited);
  });

  filterRows();
  window.setInterval(function () {
    if (document.visibilityState === "visible") { tickTimes(); }
  }, 1000);
  if (live) {
    say("updates every " + INTERVAL / 1000 + " s");
    schedule(INTERVAL);
  }
}());
