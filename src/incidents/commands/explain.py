"""`incidents explain ID`: why an incident was classified and grouped the way it was.

Its message (as stored: secrets already redacted), each normalisation applied to it in
order with the rule's name, the normalised message, the signature and its key, the rule
that classified it and the input it matched (or that the caller gave the class), and the
other incidents of its group, from the SQLite mirror (`mirror.signature_group`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from incidents import artifacts, fsutil, grouping, groups, mirror, output, store
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, Session, open_root
from incidents.errors import IncidentsError
from incidents.fingerprint import GIVEN_OPTIONS, current_signature, normalization_of
from incidents.layout import validate_id
from incidents.signature import NORMALIZATION_VERSION, normalize_steps, signature_key
from incidents.termtext import one_line

SHOWN_CHARS = 120  # a longer part of the message is cut in the text output (not in --json)


def explain(session: Session, incident_id: str) -> dict[str, Any]:
    """Everything `explain` shows, as its `--json` prints it."""
    root = session.root
    bucket, folder = root.locate(incident_id)
    doc = store.read_incident(folder)
    inputs = doc.get("signature_inputs")
    inputs = inputs if isinstance(inputs, dict) else {}
    failure = inputs.get("failure") if inputs.get("basis") == "failure" else None
    steps: list[tuple[str, str, str]] = []  # of what the signature was made of
    made_of = failure if isinstance(failure, str) else str(doc.get("message", ""))
    normalized = normalize_steps(made_of, steps)
    stored, current = doc["error_signature"], current_signature(doc)
    version = normalization_of(doc)
    recorded = inputs.get("normalized")
    return {
        "incident_id": incident_id,
        "bucket": bucket,
        "status": doc.get("status"),
        "failure_class": doc.get("failure_class"),
        "error_code": doc.get("error_code"),
        "message": doc.get("message"),
        "normalization": {
            "version": NORMALIZATION_VERSION,
            "steps": [{"rule": r, "before": b, "after": a} for r, b, a in steps],
            "normalized": normalized,
            "basis": "failure" if isinstance(failure, str) else "message",
            "made_of": made_of,
        },
        "signature": {
            "signature": stored,
            "key": signature_key(stored),
            "normalization": version,
            "inputs": inputs or None,
            "current": current,
            "current_key": signature_key(current),
            # same version, other result: the rules changed and the version did not
            "drift": version == NORMALIZATION_VERSION
            and recorded is not None
            and recorded != normalized,
        },
        "classified_by": _classified_by(doc, folder),
        "group": _group(session, incident_id, (stored, current, grouping.group_of(doc))),
        "decisions": groups.group_record(session.root, incident_id),
        "targets": _targets(doc),
        "reproduction": doc.get("reproduction"),
        "recurrence": (
            {"of": doc["recurrence_of"], "after": doc.get("recurrence_after")}
            if doc.get("recurrence_of")
            else None
        ),
    }


def _targets(doc: dict[str, Any]) -> dict[str, Any]:
    """Its targets and where each came from: given (`--python-file`, `--powershell-file`,
    a plan) or inferred from the failure's output (which tool or traceback, which line)."""
    found = doc.get("inferred")
    inferred: dict[str, Any] = found if isinstance(found, dict) else {}
    named = {
        e["path"]: e for e in inferred.get("targets") or [] if isinstance(e, dict) and "path" in e
    }
    rows = []
    for field in ("python_files", "powershell_files"):
        for path in doc.get(field) or []:
            entry = named.get(path)
            rows.append(
                {
                    "path": path,
                    "field": field,
                    "inferred": entry is not None,
                    "from": entry.get("from") if entry else "given",
                    "log_line": entry.get("log_line") if entry else None,
                    "evidence": entry.get("evidence") if entry else None,
                }
            )
    other = [e for p, e in named.items() if e.get("kind") == "other"]
    return {"targets": rows, "other_files": other, "tests": list(inferred.get("tests") or [])}


def _classified_by(doc: dict[str, Any], folder: Path) -> dict[str, Any] | None:
    """incident.json's `classified_by`; for an incident captured before it was recorded
    there, the sentence its capture wrote into context.json (`source` says which)."""
    found = doc.get("classified_by")
    if isinstance(found, dict):
        return {**found, "source": artifacts.INCIDENT}
    try:
        context = fsutil.read_json_object(folder / artifacts.CONTEXT)
    except (IncidentsError, OSError):
        return None
    reason = context.get("classified_by")
    if not isinstance(reason, str):
        return None
    return {"reason": reason, "source": artifacts.CONTEXT}


def _group(session: Session, incident_id: str, signatures: tuple[str, ...]) -> dict[str, Any]:
    from incidents.commands.status import open_mirror

    try:
        conn = open_mirror(session.root)
    except mirror.MirrorError as exc:
        return {"signatures": list(dict.fromkeys(signatures)), "others": [], "error": str(exc)}
    try:
        group = mirror.signature_group(conn, signatures)
    finally:
        conn.close()
    others = [
        {
            "incident_id": r.incident_id,
            "bucket": r.bucket,
            "status": r.status,
            "signature": r.signature,
            "occurrences": r.occurrences,
            "created_at": r.created_at,
        }
        for r in group.incidents
        if r.incident_id != incident_id
    ]
    return {"signatures": list(group.signatures), "others": others, "error": None}


def _short(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def show(found: dict[str, Any]) -> None:
    """The text form of `explain`."""
    out = output.out
    sig, norm = found["signature"], found["normalization"]
    out(f"{'incident:':14} {found['incident_id']} ({found['bucket']}, {found['status']})")
    out(f"{'message:':14} {one_line(found['message'])}")
    if not norm["steps"]:
        out(f"normalization: nothing volatile (rules {norm['version']})")
    else:
        out(f"normalization (rules {norm['version']}), in order:")
    for step in norm["steps"]:
        if step["before"] == step["after"]:  # a rule that keeps what it matched
            out(f"  {step['rule']}: {_short(step['before'])} kept (it names the failure)")
        else:
            out(f"  {step['rule']}: {_short(step['before'])} -> {step['after']}")
    if norm["basis"] == "failure":  # (else: its message, as every signature was before)
        out(f"{'made of:':14} what failed, read from its output: {_short(norm['made_of'])}")
    out(f"{'normalized:':14} {norm['normalized']}")
    out(f"{'signature:':14} {sig['signature']}")
    out(f"{'key:':14} {sig['key']}")
    if sig["current"] != sig["signature"]:
        out(f"{'':14} made by normalization rules {sig['normalization']}; by the current "
            f"rules ({norm['version']}) it is:")  # fmt: skip
        out(f"{'':14} {sig['current']} (key {sig['current_key']})")
    if sig["drift"]:
        out(f"{'':14} note: the current rules normalise the message differently from its "
            f"capture, under the same version {sig['normalization']}")  # fmt: skip
    _show_classification(found)
    _show_targets(found["targets"], found["reproduction"])
    _show_decisions(found["decisions"])
    if found["recurrence"]:
        again = found["recurrence"]
        out(
            f"{'recurrence:':14} of {again['of']} (closed: {one_line(again['after'])}; no fix "
            "was verified, so it is no regression)"
        )
    _show_group(found["group"])


def _show_targets(found: dict[str, Any], reproduction: Any) -> None:
    out = output.out
    for t in found["targets"]:
        if not t["inferred"]:
            out(f"{'target:':14} {one_line(t['path'])} (given)")
            continue
        where = one_line(t["from"])  # a log line, or (0) what the failing test imports
        where += f" output, log line {t['log_line']}" if t["log_line"] else ""
        out(
            f"{'target:':14} {one_line(t['path'])} inferred from {where}: "
            f"{_short(one_line(t['evidence'] or ''))}"
        )
    for e in found["other_files"]:
        out(
            f"{'named:':14} {one_line(e.get('path'))} (from {one_line(e.get('from'))}; not "
            "a kind of target the checks run on)"
        )
    for test in found["tests"]:
        out(f"{'failed test:':14} {one_line(test)} (run again by every check)")
    if isinstance(reproduction, dict):
        command = one_line(reproduction.get("command"))
        if reproduction.get("kept"):
            out(f"{'reproduction:':14} {command} (every check runs it again)")
        else:
            out(
                f"{'reproduction:':14} none: {command} not kept: {one_line(reproduction.get('why'))}"
            )


def _show_decisions(record: dict[str, Any]) -> None:
    """The group a person's decisions put it in, each decision, and what it regresses."""
    out = output.out
    if record["group"] != record["signature"]:
        out(f"{'group:':14} {one_line(record['group'])}")
    for d in record["decisions"]:
        kind, at, by, why = (one_line(d.get(k)) for k in ("kind", "at", "by", "reason"))
        out(f"{'':14} {kind} at {at} by {by}: {why} "
            f"({one_line(d.get('from'))} -> {one_line(d.get('to'))})")  # fmt: skip
    if record["regression_of"]:
        out(f"{'regression:':14} #{record['regression_count']} of {record['regression_of']}")


def _show_classification(found: dict[str, Any]) -> None:
    out = output.out
    by = {
        k: one_line(v) if isinstance(v, str) else v
        for k, v in (found["classified_by"] or {}).items()
    } or None
    verdict = f"{found['failure_class']} / {found['error_code']}"
    if by is None:
        out(f"{'classified:':14} {verdict}; how is not recorded")
        return
    if by["source"] == artifacts.CONTEXT:
        out(f"{'classified:':14} {verdict}: {by['reason']} (context.json, an older capture)")
        return
    rule = f"rule {by['rule']!r} in the {by['where']}" if by.get("rule") else ""
    given = [GIVEN_OPTIONS.get(g, g) for g in by.get("given", [])]
    if given:
        out(f"{'classified:':14} {verdict}: {' and '.join(given)} given by the caller")
        said = f"{by.get('failure_class')} / {by.get('error_code')}"
        out(f"{'':14} (the classifier said {said}: {by.get('reason', '')})")
    elif rule:
        out(f"{'classified:':14} {verdict} by {rule}")
        out(f"{'':14} {by.get('reason', '')}")
    else:
        out(f"{'classified:':14} {verdict}: {by.get('reason', '')}")


def _show_group(group: dict[str, Any]) -> None:
    out = output.out
    if group["error"]:
        out(f"{'same group:':14} unknown: {group['error']}")
        return
    others = group["others"]
    if not others:
        out(f"{'same group:':14} no other incident")
        return
    out(f"{'same group:':14} {len(others)} other incident(s)")
    rows = [
        [o["incident_id"], o["bucket"], o["status"], str(o["occurrences"]), o["created_at"]]
        for o in others
    ]
    table = output.table(["ID", "WHERE", "STATUS", "SEEN", "CREATED"], rows)
    out("\n".join(f"  {line}" for line in table.splitlines()))


def register(app: typer.Typer) -> None:
    @app.command("explain")
    def explain_cmd(
        incident_id: Annotated[str, typer.Argument(metavar="ID", help="The incident.")],
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Explain an incident's classification and signature, and what shares its group."""
        validate_id(incident_id)
        found = explain(open_root(root, config, incident_id), incident_id)
        if as_json:
            output.out_json(found)
        else:
            show(found)
        return 0
