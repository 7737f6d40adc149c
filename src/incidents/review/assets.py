"""The page's inline CSS and JS (no external assets: the file must open anywhere, offline).

The JS is a few lines of vanilla code: tabs, filters (also read from and written to the URL
hash, `#tab=escalated&step=lint&class=code&reason=...`) and lazy details: a card's details
are rendered from an embedded JSON string only when opened, so 1,000 cards stay a small DOM.
"""

CSS = """
:root { --fg:#1d232a; --muted:#5b6570; --line:#d7dce1; --bg:#f6f7f9; --card:#fff;
  --accent:#1f5fbf; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color:var(--fg); background:var(--bg); }
header.page { padding:14px 20px 6px; }
header.page h1 { margin:0 0 2px; font-size:20px; }
header.page p { margin:0; color:var(--muted); }
section.spend table { display:inline-table; border-collapse:collapse; margin:4px 16px 0 0;
  font-size:12px; vertical-align:top; }
section.spend td, section.spend th { padding:1px 8px; text-align:left; }
nav.tabs { display:flex; gap:4px; padding:8px 20px 0; border-bottom:1px solid var(--line); }
nav.tabs button { font:inherit; padding:6px 14px; border:1px solid var(--line);
  border-bottom:none; background:#e9ecef; border-radius:6px 6px 0 0; cursor:pointer; }
nav.tabs button[aria-selected="true"] { background:var(--card); font-weight:600; }
form.filters { display:flex; flex-wrap:wrap; gap:10px; align-items:center; padding:10px 20px;
  background:var(--card); border-bottom:1px solid var(--line); position:sticky; top:0; z-index:2; }
form.filters label { color:var(--muted); }
form.filters select { font:inherit; max-width:22em; }
#shown { margin-left:auto; color:var(--muted); }
main { padding:12px 20px 40px; }
.empty { color:var(--muted); font-style:italic; }
article.card { background:var(--card); border:1px solid var(--line); border-radius:8px;
  padding:10px 14px; margin:0 0 10px; content-visibility:auto;
  contain-intrinsic-size:auto 170px; }
article.card[hidden] { display:none; }
.card .top { display:flex; gap:16px; align-items:flex-start; justify-content:space-between; }
.card h2 { font-size:14px; margin:0 0 4px; font-family:ui-monospace, monospace; word-break:break-all; }
.badges span { display:inline-block; padding:1px 7px; margin:0 4px 3px 0; border-radius:10px;
  background:#eef1f4; font-size:12px; }
.badges .quarantined { background:#fde2c7; } .badges .infra_failure { background:#f9d0d0; }
.badges .resolved, .badges .success { background:#d3f0d9; }
.reason { margin:3px 0; font-weight:600; }
.sig { color:var(--muted); font-family:ui-monospace, monospace; font-size:12px; word-break:break-all; }
svg.chart { flex:none; background:#fafbfc; border:1px solid var(--line); border-radius:4px; }
.legend { font-size:11px; color:var(--muted); text-align:right; }
.legend i { display:inline-block; width:9px; height:9px; margin:0 3px 0 8px; border-radius:2px; }
.cmd { display:block; margin-top:6px; padding:5px 8px; background:#0f1720; color:#e6edf3;
  border-radius:4px; font:12px ui-monospace, monospace; user-select:all; overflow-x:auto;
  white-space:pre; }
details { margin-top:6px; } summary { cursor:pointer; color:var(--accent); }
.body h3 { font-size:13px; margin:10px 0 4px; }
.body table { border-collapse:collapse; font-size:12px; }
.body td, .body th { border-bottom:1px solid var(--line); padding:2px 8px 2px 0; text-align:left;
  vertical-align:top; }
.body pre { background:#f3f5f7; padding:8px; border-radius:4px; overflow-x:auto; font-size:12px;
  max-height:28em; }
.body .add { color:#0a6b2b; } .body .del { color:#a11; }
ul.fix { margin:0; padding-left:18px; font-size:12px; }
.headline { margin:2px 0 4px; font-size:15px; font-weight:600; color:#a11; word-break:break-word; }
.ev { margin-top:6px; font-size:13px; } .ev ul { margin:2px 0 0; padding-left:18px; }
.ev code, .decide code { font-size:12px; } .ev .at { color:var(--muted); font:12px ui-monospace, monospace; }
.ev .said { font-family:ui-monospace, monospace; font-size:12px; color:#7a1d1d; }
.decide { margin-top:8px; font-size:13px; }
"""

JS = """
(function () {
  var data = null;
  function details() {
    if (data === null) { data = JSON.parse(document.getElementById('details').textContent); }
    return data;
  }
  document.addEventListener('toggle', function (e) {
    var d = e.target;
    if (d.tagName !== 'DETAILS' || !d.open || d.dataset.filled) { return; }
    d.querySelector('.body').innerHTML = details()[d.dataset.id] || '<p>No details.</p>';
    d.dataset.filled = '1';
  }, true);

  var keys = ['step', 'class', 'reason'];
  var form = document.getElementById('filters');
  var cards = Array.prototype.slice.call(document.querySelectorAll('article.card'));
  var tab = 'escalated';

  function showTab(name) {
    if (!document.getElementById('tab-' + name)) { name = 'escalated'; }
    tab = name;
    document.querySelectorAll('section.tab').forEach(function (s) {
      s.hidden = s.id !== 'tab-' + name;
    });
    document.querySelectorAll('nav.tabs button').forEach(function (b) {
      b.setAttribute('aria-selected', String(b.dataset.tab === name));
    });
  }

  function apply() {
    var want = {};
    keys.forEach(function (k) { want[k] = form.elements[k].value; });
    var shown = 0, total = 0;
    cards.forEach(function (c) {
      var ok = keys.every(function (k) { return !want[k] || c.dataset[k] === want[k]; });
      c.hidden = !ok;
      if (c.dataset.bucket === tab) { total += 1; if (ok) { shown += 1; } }
    });
    document.getElementById('shown').textContent = shown + ' of ' + total + ' shown';
    var hash = new URLSearchParams();
    hash.set('tab', tab);
    keys.forEach(function (k) { if (want[k]) { hash.set(k, want[k]); } });
    history.replaceState(null, '', '#' + hash.toString());
  }

  function fromHash() {
    var params = new URLSearchParams(location.hash.slice(1));
    showTab(params.get('tab') || 'escalated');
    keys.forEach(function (k) {
      var select = form.elements[k], value = params.get(k) || '';
      if (value && !Array.prototype.some.call(select.options, function (o) { return o.value === value; })) {
        select.add(new Option(value + ' (none)', value));
      }
      select.value = value;
    });
    apply();
  }

  form.addEventListener('change', apply);
  form.addEventListener('reset', function () { setTimeout(apply, 0); });
  document.querySelectorAll('nav.tabs button').forEach(function (b) {
    b.addEventListener('click', function () { showTab(b.dataset.tab); apply(); });
  });
  window.addEventListener('hashchange', fromHash);
  fromHash();
  document.body.dataset.ready = '1';
})();
"""
