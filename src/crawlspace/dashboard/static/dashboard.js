/* crawlspace dashboard: renders one snapshot (embedded by `crawlspace report`, or polled from
   api/snapshot by `crawlspace serve`). No network access beyond the page's own origin. */
(function () {
  "use strict";
  var embedded = window.CRAWLSPACE_SNAPSHOT || null;
  var params = new URLSearchParams(window.location.search);
  // NaN (?refresh=x) would make setTimeout fire at once: a request loop against crawl.db.
  var asked = Number(params.get("refresh") || 1000);
  var refreshMs = isFinite(asked) ? Math.max(200, asked) : 1000;
  var plots = {};
  var hostSort = { key: "fetched", dir: -1 };
  var lastHosts = [];
  var updates = 0;
  var HOST_COLUMNS = [
    ["host_key", "host"], ["fetched", "fetched"], ["errors", "errors"], ["status_429", "429s"],
    ["failed", "failed"], ["duplicate_rate", "dup rate"], ["queued", "queued"],
    ["in_flight", "in flight"], ["admitted", "admitted"], ["robots", "robots"],
    ["next_allowed_at", "next allowed"], ["backoff_level", "backoff"], ["failures", "failure streak"]
  ];

  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }
  function fmtNum(v) { return v === null || v === undefined ? "" : Number(v).toLocaleString("en"); }
  function fmtTime(ts) {
    if (!ts) { return ""; }
    return new Date(ts * 1000).toISOString().replace("T", " ").slice(0, 19);
  }
  function fmtBytes(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return n.toFixed(i ? 1 : 0) + " " + units[i];
  }

  function renderTotals(snap) {
    var s = snap.summary, box = $("totals");
    var last = snap.samples.pages_per_s.length ? snap.samples.pages_per_s[snap.samples.pages_per_s.length - 1] : 0;
    var cards = [
      ["pages", fmtNum(s.pages)], ["pages/s (last)", Number(last || 0).toFixed(1)],
      ["queued", fmtNum(s.queued)], ["URLs known", fmtNum(s.urls)],
      ["hosts crawled", s.hosts_crawled + " / " + s.hosts], ["bytes", fmtBytes(s.bytes)],
      ["exact duplicates", fmtNum(s.exact_duplicates)]
    ];
    var render = s.render || {};
    if (render.pages || render.failed) {  // the rendering tier (--render): only when it ran
      cards.push(["rendered (failed)", fmtNum(render.pages || 0) + " (" + fmtNum(render.failed || 0) + ")"]);
    }
    // Pages that needed a render and did not get one (a budget spent, a host whose renders
    // added nothing), by why.
    var skipped = Object.keys(render).filter(function (k) { return k.indexOf("skipped.") === 0; });
    if (skipped.length) {
      cards.push(["renders skipped", skipped.map(function (k) {
        return k.slice("skipped.".length) + " " + fmtNum(render[k]);
      }).join(", ")]);
    }
    box.replaceChildren.apply(box, cards.map(function (c) {
      var card = el("div", null, "card");
      card.appendChild(el("b", c[1]));
      card.appendChild(document.createTextNode(c[0]));
      card.dataset.name = c[0];
      return card;
    }));
  }

  // A sampled column, or nulls where a crawl.db from before it has none.
  function col(s, name) { return s[name] || s.ts.map(function () { return null; }); }

  // A cumulative series as a rate: its change between two samples over their interval.
  function perSecond(ts, totals) {
    return totals.map(function (v, i) {
      if (i === 0 || v === null || totals[i - 1] === null || ts[i] <= ts[i - 1]) { return null; }
      return Math.max(0, (v - totals[i - 1]) / (ts[i] - ts[i - 1]));
    });
  }

  function renderPlot(id, xs, ys, label, color) {
    renderLines(id, xs, [[ys, label, color]]);
  }

  // Several series on one chart: [[values, label, color], ...]; data-peak is the first's.
  function renderLines(id, xs, lines) {
    var target = $(id);
    var data = [xs].concat(lines.map(function (line) {
      return line[0].map(function (v) { return v === null || v === undefined ? null : Number(v); });
    }));
    if (!plots[id]) {
      var series = [{}].concat(lines.map(function (line) {
        return { label: line[1], stroke: line[2], width: 2, fill: lines.length === 1 ? line[2] + "22" : undefined, spanGaps: true };
      }));
      plots[id] = new uPlot({
        width: 420, height: 200, legend: { show: lines.length > 1 },
        scales: { x: { time: true } }, series: series, axes: [{}, { size: 60 }]
      }, data, target);
    } else {
      plots[id].setData(data);
    }
    target.dataset.points = String(xs.length);
    var values = data[1].filter(function (v) { return v !== null && isFinite(v); });
    target.dataset.peak = values.length ? String(Math.max.apply(null, values)) : "";
  }

  function renderStatus(statuses) {
    var box = $("status-mix"), total = 0, key;
    for (key in statuses) { total += statuses[key]; }
    var rows = Object.keys(statuses).map(function (code) {
      var row = el("div"), n = statuses[code];
      var bar = el("span", null, "bar c" + code.charAt(0) + "xx");
      bar.style.width = Math.max(2, Math.round(300 * n / Math.max(total, 1))) + "px";
      row.appendChild(el("code", code));
      row.appendChild(bar);
      row.appendChild(el("span", fmtNum(n)));
      return row;
    });
    box.replaceChildren.apply(box, rows);
  }

  function hostCell(key, value) {
    if (key === "next_allowed_at" || key === "robots_expires_at") { return fmtTime(value); }
    if (key === "duplicate_rate") { return (100 * (value || 0)).toFixed(1) + "%"; }
    if (key === "robots" && value === null) { return "pending"; }
    return value === null || value === undefined ? "" : value;
  }

  function compare(a, b) {
    var x = a[hostSort.key], y = b[hostSort.key];
    if (x === y) { return 0; }
    if (x === null || x === undefined) { return 1; }
    if (y === null || y === undefined) { return -1; }
    return (x < y ? -1 : 1) * hostSort.dir;
  }

  function renderHosts(hosts) {
    lastHosts = hosts;
    var table = $("hosts");
    var cols = HOST_COLUMNS.filter(function (c) {
      return hosts.length === 0 || Object.prototype.hasOwnProperty.call(hosts[0], c[0]);
    });
    var head = el("tr");
    cols.forEach(function (c) {
      var th = el("th", c[1]);
      th.dataset.key = c[0];
      if (hostSort.key === c[0]) { th.setAttribute("aria-sort", hostSort.dir > 0 ? "ascending" : "descending"); }
      th.addEventListener("click", function () {
        hostSort = { key: c[0], dir: hostSort.key === c[0] ? -hostSort.dir : (c[0] === "host_key" ? 1 : -1) };
        renderHosts(lastHosts);
      });
      head.appendChild(th);
    });
    table.tHead.replaceChildren(head);
    var body = hosts.slice().sort(compare).map(function (h) {
      var tr = el("tr");
      cols.forEach(function (c) {
        var v = h[c[0]];
        var td = el("td", hostCell(c[0], v), typeof v === "number" ? "num" : "");
        if (c[0] === "host_key" && !embedded) {  // a served dashboard: its queue on a click
          var link = el("a", v);
          link.href = "#queue-view";
          link.addEventListener("click", function () { showQueue(v); });
          td.replaceChildren(link);
        }
        tr.appendChild(td);
      });
      return tr;
    });
    table.tBodies[0].replaceChildren.apply(table.tBodies[0], body);
  }

  // One host's queue: its next URLs in the order its leases take them (read on each click).
  function showQueue(hostKey) {
    $("queue-view").hidden = false;
    $("queue-host").textContent = hostKey;
    $("queue-said").textContent = "reading…";
    fetch("api/host?key=" + encodeURIComponent(hostKey), { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : r.text().then(function (t) { throw new Error(t); }); })
      .then(function (data) {
        var body = $("queue").tBodies[0];
        body.replaceChildren.apply(body, data.urls.map(function (u, i) {
          var tr = el("tr");
          tr.appendChild(el("td", String(i + 1), "num"));
          tr.appendChild(el("td", u.url));
          [u.priority, u.depth].forEach(function (v) { tr.appendChild(el("td", fmtNum(v), "num")); });
          tr.appendChild(el("td", u.source));
          tr.appendChild(el("td", fmtNum(u.attempts), "num"));
          return tr;
        }));
        $("queue-said").textContent = data.urls.length
          ? "the next " + data.urls.length + " URLs its leases take, first first"
          : "nothing queued on this host";
        document.body.dataset.queueHost = data.host;
      })
      .catch(function (err) { $("queue-said").textContent = String(err); });
  }
  $("queue-close").addEventListener("click", function () { $("queue-view").hidden = true; });

  function renderErrors(errors) {
    var body = $("errors").tBodies[0];
    body.replaceChildren.apply(body, errors.map(function (e) {
      var tr = el("tr");
      tr.appendChild(el("td", fmtTime(e.at)));
      tr.appendChild(el("td", e.what));
      tr.appendChild(el("td", e.url));
      tr.appendChild(el("td", e.via || ""));
      return tr;
    }));
  }

  // Hosts the trap detector flagged (discovery ratio not falling; their new links are demoted)
  // and the URLs refused by each trap budget.
  // URL families flagged by what they yield (frontier/trap_yield.py) are listed too.
  var TRAP_REASONS = ["depth", "path_repeat", "query_params", "budget_template", "excluded_pattern",
                      "budget_host", "budget_host_day", "url_length", "trap_template",
                      "trap_facets", "trap_loop", "canonical_variant", "equivalent_url"];

  function renderTraps(summary) {
    var body = $("traps").tBodies[0], rows = [];
    var flagged = (summary.traps && summary.traps.flagged_hosts) || [];
    flagged.forEach(function (h) {
      var tr = el("tr");
      tr.appendChild(el("td", "demoted host"));
      tr.appendChild(el("td", h.host));
      tr.appendChild(el("td", "discovery ratio " + Number(h.discovery_ratio).toFixed(2)));
      rows.push(tr);
    });
    var families = (summary.traps && summary.traps.flagged_families) || [];
    families.forEach(function (f) {
      var tr = el("tr");
      tr.appendChild(el("td", "trap family"));
      tr.appendChild(el("td", f.host + " " + f.family));
      tr.appendChild(el("td", f.reason));
      rows.push(tr);
    });
    var rejected = summary.rejections || {};
    TRAP_REASONS.forEach(function (reason) {
      if (!rejected[reason]) { return; }
      var tr = el("tr");
      tr.appendChild(el("td", "budget"));
      tr.appendChild(el("td", reason));
      tr.appendChild(el("td", rejected[reason] + " URLs refused"));
      rows.push(tr);
    });
    body.replaceChildren.apply(body, rows);
  }

  function render(snap) {
    if (!snap.ready) { $("status").textContent = snap.message; return; }
    var s = snap.samples, ended = snap.meta.last_run_ended_at;
    // A worker's dashboard: totals and hosts are the whole shared crawl's.
    $("dir").textContent = snap.frontier
      ? snap.dir + " (worker; totals and hosts: the crawl in namespace " + snap.frontier.namespace + ")"
      : snap.dir;
    renderTotals(snap);
    renderPlot("plot-rate", s.ts, s.pages_per_s, "pages/s", "#4a78c2");
    renderPlot("plot-queued", s.ts, s.queued, "queued", "#2b9348");
    renderPlot("plot-discovery", s.ts, s.discovery_ratio, "new URLs / page", "#c2552f");
    renderPlot("plot-bytes", s.ts, perSecond(s.ts, s.bytes), "bytes/s", "#7b4ab8");
    renderPlot("plot-inflight", s.ts, s.in_flight, "in flight", "#3a8fa3");
    renderPlot("plot-errors", s.ts, perSecond(s.ts, s.errors), "errors/s", "#c23030");
    renderLines("plot-latency", s.ts, [
      [col(s, "latency_p95_ms"), "p95", "#c2552f"], [col(s, "latency_p50_ms"), "p50", "#4a78c2"]
    ]);
    renderLines("plot-classes", s.ts, [
      [perSecond(s.ts, col(s, "status_2xx")), "2xx", "#2b9348"],
      [perSecond(s.ts, col(s, "status_3xx")), "3xx", "#8a8a8a"],
      [perSecond(s.ts, col(s, "status_4xx")), "4xx", "#d9822b"],
      [perSecond(s.ts, col(s, "status_5xx")), "5xx", "#c23030"]
    ]);
    renderStatus(snap.summary.statuses);
    renderHosts(snap.hosts);
    renderErrors(snap.errors);
    renderTraps(snap.summary);
    if (snap.control) { renderSteering(snap.control); }
    updates += 1;
    document.body.dataset.updates = String(updates);
    document.body.dataset.pages = String(snap.summary.pages);
    $("status").textContent = (embedded ? "report of a crawl; " : "live, refreshed " + new Date().toLocaleTimeString() + "; ") +
      s.ts.length + " samples" + (ended ? "; last run ended " + fmtTime(Number(ended)) : "");
  }

  // Steering (a served dashboard that steers its crawl: the page holds its token).
  var tokenMeta = document.querySelector('meta[name="crawlspace-token"]');
  function renderSteering(control) {
    $("steer").hidden = false;
    document.body.dataset.paused = String(Boolean(control.paused));
    $("pause").disabled = Boolean(control.paused);
    $("resume").disabled = !control.paused;
  }
  function command(body) {
    $("steer-said").textContent = "sending: " + body.command;
    return fetch("api/control", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Crawlspace-Token": tokenMeta.content },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.text().then(function (text) {
        $("steer-said").textContent = r.ok ? "sent: " + body.command : text.trim();
        return r.ok;
      });
    }).catch(function (err) { $("steer-said").textContent = String(err); return false; });
  }
  if (tokenMeta && !embedded) {
    $("pause").addEventListener("click", function () { command({ command: "pause" }); });
    $("resume").addEventListener("click", function () { command({ command: "resume" }); });
    $("stop").addEventListener("click", function () { command({ command: "stop" }); });
    $("add-seeds").addEventListener("click", function () {
      var seeds = $("seeds").value.split("\n").map(function (s) { return s.trim(); })
        .filter(function (s) { return s.length > 0; });
      command({ command: "seeds", seeds: seeds }).then(function (ok) {
        if (ok) { $("seeds").value = ""; }
      });
    });
  }

  function poll() {
    fetch("api/snapshot", { cache: "no-store" })
      .then(function (r) { return r.json(); })
      .then(render)
      .catch(function (err) { $("status").textContent = "cannot reach the dashboard server: " + err; })
      .finally(function () { window.setTimeout(poll, refreshMs); });
  }

  if (embedded) { render(embedded); } else { poll(); }
})();
