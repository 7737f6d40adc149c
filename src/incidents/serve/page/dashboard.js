"use strict";
// The live dashboard: reads the API, listens to the event stream, acts through the API.
// Every text that comes from a bundle is set with textContent (never parsed as HTML).
(function () {
  var NAMES = /*EVENT_NAMES*/[];
  var TOKEN_KEY = "incidents.token";
  var state = { lastId: null, inbox: [], escalated: [], paused: null, known: {}, first: true,
    host: "", manyHosts: false, evidence: {} };
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "cls") node.className = attrs[k];
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
      else node.setAttribute(k, attrs[k]);
    });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  // --- the token: given once as #key=..., kept in this tab's sessionStorage -------------
  (function takeKey() {
    var m = /(?:^#|&)key=([^&]+)/.exec(location.hash);
    if (m) {
      try { sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1])); } catch (e) { /* not a key: ignored */ }
      history.replaceState(null, "", location.pathname + location.search);
    }
  })();
  function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

  // --- reading ------------------------------------------------------------------------
  function getJSON(path) {
    return fetch(path, { headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().then(function (doc) {
        if (!r.ok) throw new Error(doc.error || r.statusText);
        return doc;
      });
    });
  }

  function refresh() {
    return Promise.all([
      getJSON("/api/health"),
      getJSON("/api/incidents?limit=200"),
      getJSON("/api/incidents?status=escalated&limit=100"),
    ]).then(function (docs) {
      var health = docs[0], inbox = docs[1], escalated = docs[2];
      if (state.lastId === null) state.lastId = inbox.last_event_id;
      // a fleet's shared mirror: the host column shows once rows come from several hosts
      var hosts = {};
      inbox.incidents.concat(escalated.incidents).forEach(function (r) { hosts[r.host] = true; });
      state.host = inbox.host;
      state.manyHosts = Object.keys(hosts).length > 1;
      $("root").textContent = health.root;
      renderPause(health.paused);
      renderCounts(health.counts);
      renderSpend(inbox.spend);
      renderInbox(inbox);
      renderEscalated(escalated);
      state.first = false;
    }).catch(function (e) { toast("could not read the API: " + e.message, true); });
  }

  var pending = null;
  function soon() {
    if (pending) return;
    pending = setTimeout(function () { pending = null; refresh(); }, 150);
  }

  // --- rendering ----------------------------------------------------------------------
  function renderPause(paused) {
    state.paused = paused;
    $("banner").hidden = !paused;
    $("pause-btn").hidden = !!paused;
    if (paused) {
      $("banner-text").textContent = "since " + paused.since + " by " + paused.by + ": " + paused.reason +
        " — step, watch, next and claim start no new work; capture still accepts incidents.";
    }
  }

  function renderCounts(c) {
    var items = [
      ["Open", c.inbox, ""], ["New", c["inbox.new"] || 0, ""],
      ["Running", (c["inbox.running"] || 0) + (c["inbox.planned"] || 0), ""],
      ["Waiting for an agent", c.waiting, ""], ["Claimed", c.claimed, ""],
      ["Escalated", c.escalated, c.escalated ? "alert" : ""], ["Resolved", c.resolved, ""],
    ];
    var box = $("counts");
    box.textContent = "";
    items.forEach(function (it) {
      box.appendChild(el("div", { cls: "count " + it[2] }, el("b", { text: String(it[1]) }), el("span", { text: it[0] })));
    });
  }

  // the AI fixers' spend (incidents.fixers.spend): today's in all and per group from the
  // list's answer, an inbox row's today, an escalated card's all its attempts
  function spendText(s) {
    return s.attempts + " AI attempt(s), " + s.input_tokens + " tokens in, " + s.output_tokens +
      " out, $" + Number(s.cost_usd).toFixed(4);
  }

  function renderSpend(s) {
    state.spend = s || { by_group: {}, by_incident: {}, attempts: 0 };
    var box = $("spend");
    box.textContent = "";
    box.appendChild(el("b", { text: "AI spend today" + (s ? " (" + s.day + ", UTC)" : "") + ": " }));
    box.appendChild(el("span", { cls: "spend-total", text: state.spend.attempts ? spendText(state.spend) : "none" }));
    var groups = state.spend.by_group;
    var names = Object.keys(groups).sort(function (a, b) { return groups[b].cost_usd - groups[a].cost_usd; });
    if (!names.length) return;
    box.appendChild(el.apply(null, ["ul", { cls: "spend-groups" }].concat(names.map(function (g) {
      return el("li", { "data-group": g }, el("span", { cls: "mono", text: g }), ": " + spendText(groups[g]));
    }))));
  }

  function waitingReason(row) {
    if (row.lease_owner) return "claimed by " + row.lease_owner;
    if (row.waiting) return "waiting for an agent";
    if (row.not_before && Date.parse(row.not_before) > Date.now()) {  // ISO 8601
      return "retry after " + new Date(Date.parse(row.not_before)).toISOString().slice(11, 19) + "Z";
    }
    if (state.paused) return "paused";
    return "";
  }

  function renderInbox(doc) {
    var body = $("inbox").tBodies[0];
    body.textContent = "";
    $("inbox-total").textContent = doc.total > doc.incidents.length
      ? "(" + doc.incidents.length + " of " + doc.total + ")" : "(" + doc.total + ")";
    $("inbox-empty").hidden = doc.total > 0;
    $("inbox-host").hidden = !state.manyHosts;
    doc.incidents.forEach(function (row) {
      var fresh = !state.first && !state.known[row.incident_id];
      state.known[row.incident_id] = true;
      var why = waitingReason(row);
      var tr = el("tr", { "data-id": row.incident_id, cls: fresh ? "fresh" : "" },
        el("td", { cls: "id", title: row.message }, row.incident_id, el("div", { cls: "muted", text: row.message })),
        state.manyHosts ? el("td", { cls: "host", text: row.host }) : null,
        el("td", {}, el("span", { cls: "pill " + row.status, text: row.status })),
        el("td", { cls: "mono", text: row.state || "-" }),
        el("td", {}, why ? el("span", { cls: "pill wait", text: why }) : "-"),
        el("td", { text: row.step }), el("td", { text: row.failure_class }),
        el("td", { text: row.age }), el("td", { text: String(row.occurrences) }),
        el("td", { cls: "spend", text: state.spend.by_incident[row.incident_id] ? spendText(state.spend.by_incident[row.incident_id]) : "-" }),
        el("td", {}, el("button", { type: "button", cls: "act-archive", onclick: function () { askArchive(row); } }, "Archive…")));
      body.appendChild(tr);
    });
  }

  function renderEscalated(doc) {
    var box = $("escalated");
    var open = {};
    Array.prototype.forEach.call(box.querySelectorAll("details[open]"), function (d) { open[d.getAttribute("data-id")] = true; });
    box.textContent = "";
    $("escalated-total").textContent = "(" + doc.total + ")";
    $("escalated-empty").hidden = doc.total > 0;
    doc.incidents.forEach(function (row) {
      var details = el("details", { "data-id": row.incident_id }, el("summary", {}, "Timeline, checks, diff"));
      details.addEventListener("toggle", function () { if (details.open) loadDetails(details, row.incident_id); });
      var evidence = el("div", { cls: "evidence" });
      var spent = el("div", { cls: "meta spend" });
      var card = el("div", { cls: "card", "data-id": row.incident_id },
        el("h3", { text: row.incident_id }),
        el("div", { cls: "headline", text: row.message }),
        el("div", { cls: "meta", text: [state.manyHosts ? "host " + row.host : "", row.step, row.failure_class, row.error_code || "", "seen " + row.occurrences + "x", row.regression_of ? "recurred " + row.regression_count + "x" : "", row.age + " old"].filter(Boolean).join(" · ") }),
        el("div", { cls: "meta mono", text: row.signature }),
        spent,
        evidence,
        el("div", { cls: "buttons" },
          el("button", { type: "button", cls: "act-requeue primary", onclick: function () { askResolve(row, true); } }, "Requeue with guidance…"),
          el("button", { type: "button", cls: "act-resolve", onclick: function () { askResolve(row, false); } }, "Resolve…"),
          el("button", { type: "button", cls: "act-accept-fix", onclick: function () { askAcceptFix(row); } }, "Accept the fix…")),
        details);
      box.appendChild(card);
      if (open[row.incident_id]) { details.open = true; }
      withDetail(row, function (doc) {
        var s = doc.spend;
        spent.textContent = s && s.attempts ? "AI spend: " + spendText(s) : "no AI attempts";
        if (doc.evidence) showEvidence(card, evidence, doc.evidence, open[row.incident_id + "#log"]);
      });
    });
  }

  // an escalated incident's evidence (incidents.evidence) and spend, in the API's incident
  // answer, asked for once per escalation: the bundle does not change until someone decides
  function withDetail(row, then) {
    var id = row.incident_id, key = id + " " + row.updated_at;
    var known = state.evidence[key];
    if (!known) {
      known = state.evidence[key] = getJSON("/api/incidents/" + encodeURIComponent(id))
        .then(function (doc) { return { evidence: doc.evidence || null, spend: doc.spend || null }; })
        .catch(function () { delete state.evidence[key]; return null; });
    }
    known.then(function (doc) { if (doc) then(doc); });
  }

  function list(title, items) {
    if (!items.length) return null;
    return el("div", { cls: "ev" }, el("b", { text: title + " (" + items.length + ")" }),
      el.apply(null, ["ul", {}].concat(items.slice(0, 8).concat(items.length > 8
        ? [el("li", { cls: "muted", text: (items.length - 8) + " more in the bundle's report" })] : []))));
  }

  function showEvidence(card, box, ev, logOpen) {
    card.setAttribute("data-kind", ev.kind);
    card.querySelector(".headline").textContent = ev.headline;
    box.textContent = "";
    var tests = (ev.tests || []).map(function (t) {
      return el("li", { cls: "test" }, el("span", { cls: "mono", text: t.name }),
        t.where ? el("span", { cls: "muted mono", text: " " + t.where }) : null,
        t.message ? el("span", { cls: "said mono", text: ": " + t.message }) : null);
    });
    var findings = (ev.findings || []).map(function (f) {
      return el("li", { cls: "finding" }, el("span", { cls: "mono", text: f.where }), " ",
        el("b", { text: f.code }), " (" + f.tool + "): " + f.message);
    });
    [list("Failing tests", tests), list("Findings", findings)].forEach(function (n) { if (n) box.appendChild(n); });
    var s = ev.suggestion || {};
    if (s.command) {
      box.appendChild(el("div", { cls: "decide", "data-kind": s.kind }, el("b", { text: "Suggested: " }), s.text,
        el("pre", { cls: "cmd", text: s.command })));
    }
    if (ev.log_tail) {
      var log = el("details", { cls: "log", "data-id": card.getAttribute("data-id") + "#log" },
        el("summary", { text: "Log tail (" + ev.log_tail.split("\n").length + " lines, redacted)" }),
        el("pre", { text: ev.log_tail }));
      log.open = !!logOpen;
      box.appendChild(log);
    }
  }

  function loadDetails(details, id) {
    if (details.getAttribute("data-loaded")) return;
    details.setAttribute("data-loaded", "1");
    getJSON("/api/incidents/" + encodeURIComponent(id)).then(function (doc) {
      if (doc.elsewhere) { details.appendChild(el("p", { cls: "meta", text: doc.elsewhere })); return; }
      var card = doc.review || {};
      details.appendChild(el("p", { cls: "meta", text: "reason: " + (card.reason || "-") + " · final status: " + (card.final_status || "-") }));
      var tl = el("table", { cls: "timeline" });
      (card.timeline || []).forEach(function (s) {
        tl.appendChild(el("tr", {}, el("td", { text: s.at || "" }), el("td", { text: s.what }), el("td", { text: s.detail })));
      });
      details.appendChild(tl);
      (card.notes || []).forEach(function (n) {
        details.appendChild(el("p", { cls: "meta", text: "AI attempt " + n.number + " by " + n.agent + ": " + (n.notes || "no notes") }));
      });
      (card.diffs || []).forEach(function (d) {
        details.appendChild(el("div", { cls: "mono", text: d.path }));
        details.appendChild(el("pre", { text: d.text }));
      });
      (card.problems || []).forEach(function (p) { details.appendChild(el("p", { cls: "error", text: p })); });
    }).catch(function (e) { details.appendChild(el("p", { cls: "error", text: e.message })); });
  }

  // --- actions: each behind a confirmation that says what will happen --------------------
  var current = null;
  function ask(opts) {
    current = opts;
    $("confirm-title").textContent = opts.title;
    $("confirm-text").textContent = opts.text;
    $("confirm-label").textContent = opts.label || "";
    $("confirm-label").hidden = !opts.label;
    $("confirm-input").hidden = !opts.label;
    $("confirm-input").value = "";
    $("token-label").hidden = $("token-input").hidden = !!token();
    $("confirm-error").textContent = "";
    $("confirm-ok").textContent = opts.ok;
    $("confirm").hidden = false;
    (opts.label ? $("confirm-input") : $("confirm-ok")).focus();
  }
  function close() { $("confirm").hidden = true; current = null; }

  // another host of the fleet holds it: the decision is sent there, applied on its next pass
  function where(row) {
    return row.host && row.host !== state.host
      ? " Host " + row.host + " holds it: the decision is sent there and applied on its next pass." : "";
  }

  function askResolve(row, requeue) {
    ask({
      title: (requeue ? "Requeue " : "Resolve ") + row.incident_id,
      text: (requeue
        ? "It goes back to the inbox at S_INIT, its history kept; your guidance goes into every later fixer prompt, and its signature's retry budget is reset."
        : "It is closed as resolved by a person, with your guidance as the reason, and its signature's retry budget is reset.") + where(row),
      label: requeue ? "Guidance for the next attempt" : "What a person decided",
      ok: requeue ? "Requeue" : "Resolve",
      send: function (text) {
        return post("/api/escalations/" + encodeURIComponent(row.incident_id) + "/resolve", { guidance: text, requeue: requeue });
      },
    });
  }

  function askAcceptFix(row) {
    ask({
      title: "Accept the fix of " + row.incident_id,
      text: "Only for an incident escalated for review of its fix (review_fix): its checks passed, and you have read the diff and the finding. It is closed as resolved, recorded as accepted by you." + where(row),
      label: "Your name: what you checked", ok: "Accept the fix",
      send: function (text) {
        return post("/api/escalations/" + encodeURIComponent(row.incident_id) + "/resolve", { guidance: text, accept_fix: true, by: text.indexOf(":") > 0 ? text.split(":")[0].trim() : "" });
      },
    });
  }

  function askArchive(row) {
    ask({
      title: "Archive " + row.incident_id,
      text: "It is closed by hand as resolved: its status is set, run_result.json written and the folder moved to error_archive/resolved/. Nothing is checked." + where(row),
      label: "Why it is closed", ok: "Archive as resolved",
      send: function (text) {
        return post("/api/incidents/" + encodeURIComponent(row.incident_id) + "/archive", { bucket: "resolved", reason: text });
      },
    });
  }

  $("pause-btn").addEventListener("click", function () {
    ask({
      title: "Pause everything",
      text: "step, drive, watch, next and claim start no new work until someone resumes; capture keeps accepting incidents and a claimed incident may still be submitted.",
      label: "Why everything stops", ok: "Pause",
      send: function (text) { return post("/api/pause", { reason: text }); },
    });
  });
  $("resume-btn").addEventListener("click", function () {
    ask({
      title: "Resume", ok: "Resume",
      text: "The pause flag is cleared: step, watch, next and claim work again.",
      send: function () { return post("/api/resume", {}); },
    });
  });

  function post(path, body) {
    return fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: "Bearer " + token() },
      body: JSON.stringify(body),
    }).then(function (r) {
      return r.json().then(function (doc) {
        if (r.status === 401) sessionStorage.removeItem(TOKEN_KEY);
        if (!r.ok) throw new Error(doc.error || r.statusText);
        return doc;
      });
    });
  }

  $("confirm-cancel").addEventListener("click", close);
  $("confirm-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (!current) return;
    if (!token() && $("token-input").value.trim()) sessionStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
    var opts = current;
    $("confirm-ok").disabled = true;
    opts.send($("confirm-input").value).then(function (doc) {
      close();
      toast(opts.title + (doc && doc.routed_to
        ? ": sent to host " + doc.routed_to + ", applied on its next pass" : ": done"));
      soon();
    }).catch(function (e) {
      $("confirm-error").textContent = e.message;
      $("token-label").hidden = $("token-input").hidden = !!token();
    }).then(function () { $("confirm-ok").disabled = false; });
  });
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape" && current) close(); });

  var toastTimer = null;
  function toast(text, bad) {
    var t = $("toast");
    t.textContent = text;
    t.className = bad ? "bad" : "";
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { t.hidden = true; }, 4000);
  }

  // --- the event stream ---------------------------------------------------------------
  function activity(name, doc) {
    var list = $("activity");
    var what = doc.incident_id ? doc.incident_id : "(system)";
    var detail = doc.payload && (doc.payload.action || doc.payload.reason || doc.payload.bucket || doc.payload.agent || "");
    list.insertBefore(el("li", {}, el("span", { cls: "muted", text: (doc.ts || "").slice(11, 19) + " " }),
      el("span", { cls: "name", text: name }), " " + what + (detail ? ": " + detail : "")), list.firstChild);
    while (list.children.length > 60) list.removeChild(list.lastChild);
  }

  var BACKFILL = 30; // the last events, shown in the activity list on load

  function listen() {
    var from = state.lastId;
    var m = from && /^(.*)-(\d+)$/.exec(from);
    if (m) from = m[1] + "-" + Math.max(0, Number(m[2]) - BACKFILL);
    var url = "/api/events" + (from ? "?last_event_id=" + encodeURIComponent(from) : "");
    var source = new EventSource(url);
    source.onopen = function () { $("live").className = "live on"; $("live").textContent = "live"; };
    source.onerror = function () { $("live").className = "live off"; $("live").textContent = "reconnecting"; };
    NAMES.forEach(function (name) {
      source.addEventListener(name, function (ev) {
        var doc = JSON.parse(ev.data);
        state.lastId = ev.lastEventId;
        activity(name, doc);
        soon();
      });
    });
  }

  refresh().then(listen);
})();
