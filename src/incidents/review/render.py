"""Cards to one self-contained HTML page (pure: strings in, a string out)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections import Counter
from collections.abc import Iterable
from html import escape
from typing import Any

from incidents.evidence import GUIDANCE, Evidence
from incidents.review.assets import CSS, JS
from incidents.review.gather import Card, Check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from incidents.mirror import IncidentRow

Elsewhere = tuple[str, "IncidentRow"]  # (host, its row in the shared mirror)

COLOURS = {
    "syntax": "#c62828",
    "type": "#6a1b9a",
    "test": "#ef6c00",
    "import": "#00838f",
    "lint": "#1565c0",
    "format": "#9e9d24",
    "security": "#ad1457",
    "tamper": "#4e342e",
}
OTHER = "#78909c"
BAR_W, BAR_GAP, CHART_H = 18, 6, 46
ON_CARD = 8  # failing tests and findings listed on a card; the rest are counted
LOG_KEY = "#log"  # the embedded data's key of a card's log tail: its id and this


def requeue_command(incident_id: str, root: str) -> str:
    """The exact command that sends an escalated incident back to the inbox."""
    argv = ["resolve-escalation", incident_id, "--guidance", GUIDANCE, "--requeue"]
    return decision_command(argv, root)


def decision_command(argv: list[str], root: str) -> str:
    """`incidents ARGV --root ROOT`, naming the `incidents` beside this interpreter, so it
    runs from a shell whose PATH lacks the venv."""
    return shlex.join([_program(), *argv, "--root", root])


def _program() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "incidents")
    return beside if os.access(beside, os.X_OK) else "incidents"


def chart(checks: list[Check]) -> str:
    """Stacked bars: issues per category after each canonical check (inline SVG)."""
    if not checks:
        return '<svg class="chart" width="60" height="46" role="img"><title>no checks</title></svg>'
    top = max(1, max(sum(c.counts.values()) for c in checks))
    width = len(checks) * (BAR_W + BAR_GAP) + BAR_GAP
    parts = [
        f'<svg class="chart" width="{width}" height="{CHART_H + 14}" role="img" '
        f'aria-label="errors per category after each check">'
    ]
    for i, check in enumerate(checks):
        x, y = BAR_GAP + i * (BAR_W + BAR_GAP), CHART_H
        for category, n in sorted(check.counts.items()):
            h = max(1, round(n / top * (CHART_H - 4))) if n else 0
            y -= h
            colour = COLOURS.get(category, OTHER)
            parts.append(
                f'<rect x="{x}" y="{y}" width="{BAR_W}" height="{h}" fill="{colour}">'
                f"<title>check {escape(check.label)}: {n} {escape(category)}</title></rect>"
            )
        if check.infra:  # no answer is not a clean answer: a red stub, not green
            parts.append(
                f'<rect x="{x}" y="{CHART_H - 6}" width="{BAR_W}" height="6" fill="#b00020">'
                f"<title>check {escape(check.label)}: not checked (infra failure)</title></rect>"
            )
        elif not check.counts:
            parts.append(
                f'<rect x="{x}" y="{CHART_H - 1}" width="{BAR_W}" height="1" fill="#0a6b2b"/>'
            )
        parts.append(
            f'<text x="{x + BAR_W / 2}" y="{CHART_H + 11}" font-size="9" text-anchor="middle" '
            f'fill="#5b6570">{escape(check.label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _legend(checks: list[Check]) -> str:
    cats = sorted({c for check in checks for c in check.counts})
    return "".join(f'<i style="background:{COLOURS.get(c, OTHER)}"></i>{escape(c)}' for c in cats)


def _badges(card: Card) -> str:
    items = [
        (card.final_status, card.final_status),
        ("not reproduced (flaky): no fix claimed" if card.outcome == "not_reproduced" else "", ""),
        (f"flaky x{card.flaky_count} (this signature)" if card.flaky_count else "", ""),
        (
            (
                f"regression #{card.regression_count} of {card.regression_of}"
                if card.regression_of
                else ""
            ),
            "regression",
        ),
        (f"{len(card.group_decisions)} group decision(s)" if card.group_decisions else "", ""),
        (f"step: {card.step}", ""),
        (f"class: {card.failure_class}", ""),
        (card.error_code, ""),
        (card.escalation_kind, ""),
        (f"occurrences: {card.occurrences}", ""),
        (f"AI spend: {spend_sum(card.spend.to_json())}" if card.spend.attempts else "", "spend"),
    ]
    return "".join(
        f'<span class="{escape(cls)}">{escape(text)}</span>' for text, cls in items if text
    )


def spend_sum(doc: dict[str, Any]) -> str:
    """A sum of `incidents.fixers.spend` in words: attempts, tokens, cost."""
    return (
        f"{doc['attempts']} attempt(s), {doc['input_tokens']} tokens in, "
        f"{doc['output_tokens']} out, ${doc['cost_usd']:.4f}"
    )


def spend_html(recent: dict[str, Any]) -> str:
    """The AI fixers' spend per UTC day and per group over those days (the root's ledger,
    `incidents.fixers.spend.recent`); each card says its incident's own."""
    if not recent["days"]:
        return ""
    days = "".join(
        f'<tr data-day="{escape(d["day"])}"><td>{escape(d["day"])}</td>'
        f"<td>{escape(spend_sum(d))}</td></tr>"
        for d in recent["days"]
    )
    groups = "".join(
        f'<tr data-group="{escape(g)}"><td>{escape(g)}</td><td>{escape(spend_sum(d))}</td></tr>'
        for g, d in sorted(recent["by_group"].items(), key=lambda i: -i[1]["cost_usd"])
    )
    return (
        '<section class="spend" id="spend"><details><summary>AI spend: '
        f"{escape(spend_sum(recent['days'][0]))} on {escape(recent['days'][0]['day'])} (UTC)"
        '</summary><table class="spend-days"><tr><th>day (UTC)</th><th>spent</th></tr>'
        f'{days}</table><table class="spend-groups"><tr><th>group</th>'
        f"<th>spent in these days</th></tr>{groups}</table></details></section>"
    )


def card_html(card: Card, root: str) -> str:
    attrs = " ".join(
        f'data-{k}="{escape(v)}"'
        for k, v in (
            ("bucket", card.bucket),
            ("step", card.step),
            ("class", card.failure_class),
            ("reason", card.reason),
        )
    )
    ev = card.evidence
    headline = f'<div class="headline">{escape(ev.headline)}</div>' if ev else ""
    return (
        f'<article class="card" id="{escape(card.incident_id)}" {attrs}>'
        f'<div class="top"><div><h2>{escape(card.incident_id)}</h2>{headline}'
        f'<div class="badges">{_badges(card)}</div>'
        f'<div class="reason">{escape(card.reason or "(no reason recorded)")}</div>'
        f'<div class="sig">{escape(card.signature)}</div>'
        + (f'<div class="sig">group: {escape(card.group)}</div>' if card.group else "")
        + "".join(f'<div class="sig">{escape(d)}</div>' for d in card.group_decisions)
        + f'<div class="sig">{escape(card.at)} &middot; {escape(card.message)}</div></div>'
        f'<div>{chart(card.checks)}<div class="legend">{_legend(card.checks)}</div></div></div>'
        f"{evidence_html(card.incident_id, ev, root) if ev else ''}"
        f'<details data-id="{escape(card.incident_id)}"><summary>Timeline, fixes, diff, AI notes'
        f'</summary><div class="body"></div></details></article>'
    )


def evidence_html(incident_id: str, ev: Evidence, root: str) -> str:
    """The failing tests, the findings, the decision that fits and the log tail (its text
    rendered only when opened, from the page's embedded data)."""
    out = []
    if ev.tests:
        items = [
            f"<li><code>{escape(t.name)}</code>{_at(t.where)}"
            + (f': <span class="said">{escape(t.message)}</span>' if t.message else "")
            + "</li>"
            for t in ev.tests[:ON_CARD]
        ]
        out.append(
            f'<div class="ev tests"><b>Failing tests ({len(ev.tests)})</b><ul>'
            f'{"".join(items)}{_rest(len(ev.tests))}</ul></div>'
        )
    if ev.findings:
        items = [
            f"<li><code>{escape(f.where)}</code> <b>{escape(f.code)}</b> "
            f"({escape(f.tool)}): {escape(f.message)}</li>"
            for f in ev.findings[:ON_CARD]
        ]
        out.append(
            f'<div class="ev findings"><b>Findings ({len(ev.findings)})</b><ul>'
            f'{"".join(items)}{_rest(len(ev.findings))}</ul></div>'
        )
    if ev.suggestion.argv:
        command = decision_command(ev.suggestion.argv, root)
        out.append(
            f'<div class="decide" data-kind="{escape(ev.suggestion.kind)}">'
            f"<b>Suggested:</b> {escape(ev.suggestion.text)}"
            f'<code class="cmd" title="{escape(ev.suggestion.kind)}">{escape(command)}</code></div>'
        )
    if ev.log_tail:
        lines = ev.log_tail.count("\n") + 1
        out.append(
            f'<details class="log" data-id="{escape(incident_id + LOG_KEY)}">'
            f"<summary>Log tail ({lines} lines, redacted)</summary>"
            '<div class="body"></div></details>'
        )
    return "".join(out)


def _at(where: str) -> str:
    return f' <span class="at">{escape(where)}</span>' if where else ""


def _rest(total: int) -> str:
    more = total - ON_CARD
    return f'<li class="empty">{more} more in the bundle\'s report</li>' if more > 0 else ""


def _fixes(items: list[str], empty: str) -> str:
    if not items:
        return f'<span class="empty">{empty}</span>'
    return '<ul class="fix">' + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>"


def _diff_html(text: str) -> str:
    lines = []
    for line in text.splitlines():
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        lines.append(f'<span class="{cls}">{escape(line)}</span>' if cls else escape(line))
    return "<pre>" + "\n".join(lines) + "</pre>"


def details_html(card: Card) -> str:
    """The part of a card rendered only when it is opened."""
    out = ["<h3>Timeline</h3><table><tr><th>when</th><th>state</th><th>what</th></tr>"]
    out += [
        f"<tr><td>{escape(s.at)}</td><td>{escape(s.what)}</td><td>{escape(s.detail)}</td></tr>"
        for s in card.timeline
    ]
    out.append("</table><h3>Checks: errors per category, fixed and introduced</h3><table>")
    out.append("<tr><th>check</th><th>counts</th><th>fixed</th><th>introduced</th></tr>")
    for check in card.checks:
        counts = ", ".join(f"{k}: {v}" for k, v in sorted(check.counts.items()))
        if check.infra:
            counts = "; ".join([*filter(None, [counts]), "not checked: " + "; ".join(check.infra)])
        counts = counts or "clean"
        out.append(
            f"<tr><td>{escape(check.label)}</td><td>{escape(counts)}</td>"
            f"<td>{_fixes(check.fixed, '-')}</td><td>{_fixes(check.introduced, '-')}</td></tr>"
        )
    out.append("</table><h3>AI attempt notes</h3>")
    if not card.notes:
        out.append('<p class="empty">no AI attempts</p>')
    for note in card.notes:
        head = f"attempt {note.number}: {note.agent}" + (" (handoff)" if note.handoff else "")
        head += f", exit {note.exit_code}" if note.exit_code is not None else ""
        if note.contained is not None:  # how far its claim to have stayed inside is proven
            contained = f"contained by {note.sandbox or 'bwrap'}"
            head += f", {contained}" if note.contained else ", not contained (detection only)"
        head += f", spent: {note.spend}" if note.spend else ""
        changed = ", ".join(note.changed) or "no files changed"
        out.append(f"<p><b>{escape(head)}</b> &middot; {escape(changed)}</p>")
        if note.violations:
            out.append(f"<p>violations: {escape(', '.join(note.violations))}</p>")
        out.append(f"<pre>{escape(note.notes or '(no notes)')}</pre>")
    out.append("<h3>Original vs final target files</h3>")
    if not card.diffs:
        out.append('<p class="empty">no target files</p>')
    for diff in card.diffs:
        out.append(f"<p><b>{escape(diff.path)}</b></p>")
        if "\n" in diff.text or diff.text.startswith("---"):
            out.append(_diff_html(diff.text))
        else:
            out.append(f'<p class="empty">{escape(diff.text)}</p>')
    if card.problems:
        out.append("<h3>Unreadable bundle files</h3>" + _fixes(card.problems, ""))
    return "".join(out)


def _options(values: Iterable[str], label: str, name: str) -> str:
    counts = Counter(values)
    opts = [f'<option value="">all {label}</option>']
    for value in sorted(counts):
        short = value if len(value) <= 70 else value[:67] + "..."
        opts.append(f'<option value="{escape(value)}">{escape(short)} ({counts[value]})</option>')
    return f'<label>{label} <select name="{name}">{"".join(opts)}</select></label>'


def _section(name: str, cards: list[Card], root: str) -> str:
    hidden = "" if name == "escalated" else " hidden"
    body = (
        "".join(card_html(c, root) for c in cards) or f'<p class="empty">No {name} incidents.</p>'
    )
    return f'<section class="tab" id="tab-{name}"{hidden}>{body}</section>'


def elsewhere_html(rows: list[Elsewhere], root: str) -> str:
    """The tab of the incidents other hosts of a fleet hold (from the shared mirror): their
    bundles are on those hosts, so a row each, and the command that decides from here (it
    is sent to the host holding the bundle)."""
    if not rows:
        return '<p class="empty">No open or escalated incident on another host.</p>'
    head = "<tr><th>host</th><th>incident</th><th>where</th><th>step</th><th>message</th><th>decide</th></tr>"
    body = "".join(
        f"<tr><td>{escape(host)}</td><td>{escape(r.incident_id)}</td><td>{escape(r.bucket)}</td>"
        f"<td>{escape(r.step)}</td><td>{escape(r.message[:200])}</td>"
        f"<td><code>{escape(requeue_command(r.incident_id, root)) if r.bucket == 'escalated' else ''}</code></td></tr>"
        for host, r in rows
    )
    return f'<table class="hosts">{head}{body}</table>'


def page(
    escalated: list[Card],
    resolved: list[Card],
    *,
    root: str,
    generated_at: str,
    elsewhere: list[Elsewhere] | None = None,
    spend: dict[str, Any] | None = None,
) -> str:
    """The page; `elsewhere` (a fleet sharing a mirror): what other hosts hold, a tab;
    `spend`: the AI fixers' recent spend (`incidents.fixers.spend.recent`)."""
    everything = escalated + resolved
    hosts_tab = (
        f'<button type="button" data-tab="hosts" aria-selected="false">Other hosts ({len(elsewhere)})</button>'
        if elsewhere is not None
        else ""
    )
    hosts_section = (
        f'<section class="tab" id="tab-hosts" hidden>{elsewhere_html(elsewhere, root)}</section>'
        if elsewhere is not None
        else ""
    )
    flaky = sum(1 for c in resolved if c.outcome == "not_reproduced")
    parts = {c.incident_id: details_html(c) for c in everything}
    parts |= {
        c.incident_id + LOG_KEY: f"<pre>{escape(c.evidence.log_tail)}</pre>"
        for c in everything
        if c.evidence and c.evidence.log_tail
    }
    blob = json.dumps(parts, ensure_ascii=True)
    blob = blob.replace("<", "\\u003c")  # nothing in the data can close the script element
    filters = "".join(
        (
            _options((c.step for c in everything), "steps", "step"),
            _options((c.failure_class for c in everything), "failure classes", "class"),
            _options((c.reason for c in everything), "reasons", "reason"),
        )
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>incidents: escalation review</title><style>{CSS}</style></head><body>"
        f'<header class="page"><h1>Escalation review</h1><p>{len(escalated)} escalated, '
        f"{len(resolved)} resolved ({flaky} not reproduced: flaky) &middot; reports root {escape(root)} &middot; generated "
        f"{escape(generated_at)}</p>{spend_html(spend) if spend else ''}</header>"
        '<nav class="tabs">'
        f'<button type="button" data-tab="escalated" aria-selected="true">Escalated ({len(escalated)})</button>'
        f'<button type="button" data-tab="resolved" aria-selected="false">Resolved ({len(resolved)})</button>'
        f"{hosts_tab}</nav>"
        f'<form class="filters" id="filters" onsubmit="return false">{filters}'
        '<button type="reset">clear</button><span id="shown"></span></form>'
        f"<main>{_section('escalated', escalated, root)}{_section('resolved', resolved, root)}"
        f"{hosts_section}</main>"
        f'<script type="application/json" id="details">{blob}</script>'
        f"<script>{JS}</script></body></html>\n"
    )
