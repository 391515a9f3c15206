// The execution page's live log: polls /api/v1/executions/{id}/logs?after_seq=N and
// appends the new lines until the execution is final (then one more read catches lines
// drained just after it ended). Without JavaScript the page is the same, minus the
// following: reload it for new lines.
(function () {
  "use strict";
  var log = document.getElementById("log");
  if (!log || log.dataset.final === "true") { return; }
  var id = log.dataset.execution;
  var after = parseInt(log.dataset.after || "0", 10);
  var note = document.getElementById("live-note");
  var finalReads = 0;
  var failures = 0;
  var INTERVAL = 1000;

  function utc(iso) {
    return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : "\u2013";
  }

  function text(tag, cls, value) {
    var el = document.createElement(tag);
    el.className = cls;
    el.textContent = value;
    return el;
  }

  function append(lines) {
    var stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
    lines.forEach(function (line) {
      var row = text("span", "ln lv-" + String(line.level).toLowerCase(), "");
      row.appendChild(text("span", "ts", utc(line.at)));
      row.appendChild(document.createTextNode(" "));
      row.appendChild(text("span", "lv", line.level));
      row.appendChild(document.createTextNode(" " + line.message));
      log.appendChild(row);
      log.appendChild(document.createTextNode("\n"));
      after = Math.max(after, line.seq);
    });
    if (lines.length) {
      var empty = document.getElementById("log-empty");
      if (empty) { empty.remove(); }
      if (stick) { log.scrollTop = log.scrollHeight; }
    }
  }

  function show(execution) {
    var badge = document.querySelector("#exec-status .st");
    if (badge && badge.textContent !== execution.status) {
      badge.textContent = execution.status;
      badge.className = "st st-" + execution.status;
    }
    document.getElementById("exec-started").textContent = utc(execution.started_at);
    document.getElementById("exec-finished").textContent = utc(execution.finished_at);
  }

  function poll() {
    fetch("/api/v1/executions/" + encodeURIComponent(id) + "/logs?after_seq=" + after,
          {headers: {"Accept": "application/json"}, credentials: "same-origin"})
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (doc) {
        failures = 0;
        append(doc.lines);
        show(doc.execution);
        var done = ["pending", "running"].indexOf(doc.execution.status) < 0;
        if (done) { finalReads += 1; }
        if (done && finalReads > 1) {
          note.textContent = "finished: " + doc.execution.status;
          var cancel = document.getElementById("cancel-form");
          if (cancel) { cancel.remove(); }
          return;
        }
        note.textContent = "following live";
        window.setTimeout(poll, INTERVAL);
      })
      .catch(function (error) {
        failures += 1;
        note.textContent = "cannot reach the server (" + error.message + "); retrying";
        window.setTimeout(poll, Math.min(INTERVAL * Math.pow(2, failures), 15000));
      });
  }

  note.textContent = "following live";
  window.setTimeout(poll, INTERVAL);
}());
