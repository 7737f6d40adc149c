"""`incidents capture` (= `scripts/error_capture.py`) and `incidents run -- CMD`.

Failing scripts call this, so it stays on the standard library: no typer, pydantic or
jsonschema on this path (see bench/capture.py). It validates every input before it
writes anything; then the bundle appears in the inbox in one rename, or the capture
folds into an open incident with the same signature (dedupe, under a per-signature lock).
"""

from __future__ import annotations

import json
import os
import sys
import time

from incidents import artifacts, capture_argv, clock, eventlog, fsutil, store
from incidents.capture_config import CaptureConfig, read_settings
from incidents.capture_inputs import (
    check_targets,
    check_verify,
    check_workdir,
    context_bytes,
    read_audit_tail,
    read_context_json,
    read_log_tail,
)
from incidents.errors import IncidentsError, RootError, UsageError
from incidents.layout import GROUPS, STATE, Root, resolve_root

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace
    from typing import Any, NoReturn

    Args = argparse.Namespace | SimpleNamespace  # argparse, or capture_argv


def build_parser(prog: str, for_run: bool = False) -> argparse.ArgumentParser:
    import argparse  # capture's plain lines skip it: incidents.capture_argv

    from incidents.codes import ErrorCode, FailureClass

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(f"{self.prog}: {message}")

    p = _Parser(
        prog=prog,
        description=(
            "Run a command and capture an incident when it fails."
            if for_run
            else "Capture a failure as an incident bundle in the inbox; prints its id."
        ),
    )
    p.add_argument("--step", required=True, help="the pipeline step that failed")
    p.add_argument("--message", help="what went wrong, one line (secrets are redacted)")
    p.add_argument("--run-id", help="the pipeline run this belongs to (default: generated)")
    p.add_argument("--failure-class", choices=[c.value for c in FailureClass])
    p.add_argument("--error-code", choices=[c.value for c in ErrorCode])
    if not for_run:
        p.add_argument("--exit-code", type=int, help="the failed step's exit code")
    p.add_argument("--log-file", help="a log whose tail goes into log_tail.txt")
    p.add_argument("--audit-file", help="JSON lines whose tail goes into audit_tail.jsonl")
    p.add_argument(
        "--context-json", metavar="FILE|-", help="a JSON object merged into context.json"
    )
    p.add_argument("--python-file", action="append", default=[], help="a target file (repeatable)")
    p.add_argument("--powershell-file", action="append", default=[], help="a PowerShell target")
    p.add_argument("--verify", action="append", default=[], metavar="CMD",
                   help="a verification command, run as argv without a shell (repeatable)")  # fmt: skip
    p.add_argument("--workdir", help="where targets and commands live (default: current dir)")
    p.add_argument("--root", help="the reports root (default: INCIDENTS_ROOT, config, ./reports)")
    p.add_argument("--config", help="incidents.toml (default: INCIDENTS_CONFIG, ./incidents.toml)")
    p.add_argument("--no-dedupe", action="store_true", help="always open a new incident")
    p.add_argument("--json", action="store_true", help="print the incident document")
    if not for_run:  # a script's success path (incidents.recovery)
        p.add_argument("--ok", action="store_true", help="the step succeeded: close its blips")
    if for_run:
        p.add_argument("--timeout", type=float, help="seconds before the command is killed")
        p.add_argument(
            "--reproduce",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="when it fails, the command is kept as the incident's reproduction, a "
            "verification command it must pass (if [verification] allows it; else captured "
            "without, and the bundle says why); default: [capture] reproduce (on)",
        )
        p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    return p


# --- the capture itself -----------------------------------------------------------------


class CaptureInput:
    """Everything one capture records, validated. (Plain classes here, not dataclasses:
    `dataclasses` imports `inspect`, ~10 ms on the capture path.)"""

    def __init__(self, step: str, message: str, **kw: Any) -> None:
        self.step = step
        self.message = message
        self.run_id: str | None = kw.get("run_id")
        self.failure_class: str | None = kw.get("failure_class")
        self.error_code: str | None = kw.get("error_code")
        self.exit_code: int | None = kw.get("exit_code")
        self.timed_out: bool = kw.get("timed_out", False)
        self.log_text: str = kw.get("log_text", "")
        self.audit_lines: list[str] = kw.get("audit_lines", [])
        self.context: dict[str, Any] = kw.get("context", {})
        self.python_files: list[str] = kw.get("python_files", [])
        self.powershell_files: list[str] = kw.get("powershell_files", [])
        self.verify: list[str] = kw.get("verify", [])
        self.workdir: str = kw.get("workdir", "")
        self.dedupe: bool = kw.get("dedupe", True)
        self.reproduction: dict[str, Any] | None = kw.get("reproduction")  # `run`'s command
        self.tool: str = kw.get("tool", "")  # `run`: the program whose output the log is


class CaptureResult:
    __slots__ = ("incident_id", "deduped", "incident")

    def __init__(self, incident_id: str, deduped: bool, incident: dict[str, Any]) -> None:
        self.incident_id = incident_id
        self.deduped = deduped
        self.incident = incident


def _period(context: dict[str, Any], now_year: int, now_month: int) -> tuple[int, int]:
    year, month = context.get("year"), context.get("month")
    if (
        isinstance(year, int)
        and isinstance(month, int)
        and 1970 <= year <= 9999
        and 1 <= month <= 12
    ):
        return year, month
    return now_year, now_month


def capture(
    root: Root, inp: CaptureInput, max_message_chars: int = 2000, window: int = 30
) -> CaptureResult:
    """`window`: `[capture] regression_window_days`."""
    from incidents.capture_infer import read_failure
    from incidents.classify import classify
    from incidents.fingerprint import classified_by, signature_fields
    from incidents.redact import redact, redact_json

    message = redact(inp.message.strip())[:max_message_chars]
    if not message:
        raise UsageError("--message: must not be empty")
    log_text = redact(inp.log_text)
    verdict = classify(message, log_text, inp.exit_code, inp.timed_out)
    failure_class = inp.failure_class or verdict.failure_class_value
    error_code = inp.error_code or verdict.error_code_value
    found, extra = read_failure(inp, message, log_text)  # the targets and tests it names
    signature, signature_inputs = signature_fields(failure_class, inp.step, message, found)
    given = [
        f for f, v in (("failure_class", inp.failure_class), ("error_code", inp.error_code)) if v
    ]
    ts = time.time()
    now = clock.iso_at(ts)
    year, month = _period(inp.context, *time.gmtime(ts)[:2])
    incident = {
        "incident_id": store.new_incident_id(inp.step, ts),
        "status": "new",
        "created_at": now,
        "updated_at": now,
        "run_id": inp.run_id or store.new_run_id(ts),
        "year": year,
        "month": month,
        "ym": f"{year:04d}-{month:02d}",
        "step": inp.step,
        "failure_class": failure_class,
        "message": message,
        "error_signature": signature,
        "signature_inputs": signature_inputs,
        "error_code": error_code,
        "classified_by": classified_by(verdict, given),
        "exit_code": inp.exit_code,
        "occurrences": 1,
        "last_seen": now,
        "python_files": inp.python_files,
        "powershell_files": inp.powershell_files,
        "verify": [redact(c) for c in inp.verify],
        "workdir": inp.workdir,
        "target_digests": _digests(inp),
        **extra,
    }
    context = redact_json(
        {
            "cwd": os.getcwd(),
            "host": os.uname().nodename,
            "pid": os.getppid(),
            **inp.context,
        }
    )
    root.ensure_fast()
    return _capture_in_group(root, incident, log_text, inp, context, window)


def _digests(inp: CaptureInput) -> dict[str, str]:
    targets = [*inp.python_files, *inp.powershell_files]
    if not (inp.workdir and targets):
        return {}
    from incidents.digests import target_digests

    return target_digests(inp.workdir, targets)


def _capture_in_group(
    root: Root,
    incident: dict[str, Any],
    log_text: str,
    inp: CaptureInput,
    context: dict[str, Any],
    window: int,
) -> CaptureResult:
    """Fold into the open incident of the capture's group (its signature's, or the group a
    merge sent its signature to: `incidents.grouping`), or open a new one, marked as a
    regression when the group's latest resolved incident closed within `window` days."""
    signature = incident["error_signature"]
    if not inp.dedupe:  # a new incident on its own: no fold, not a regression
        _join_group(root, incident, signature)
        return _create(root, incident, log_text, inp.audit_lines, context, None)
    from incidents import sigindex
    from incidents.capture_fold import fold_into_open
    from incidents.locks import flocked
    from incidents.signature import signature_key

    sigindex.rekey_once(root)  # once per root after the normalisation rules change
    for _ in range(3):  # a merge may move the signature while we wait for its lock
        group = _join_group(root, incident, signature)
        with flocked(store.lock_path(root, f"sig-{signature_key(group)}")):
            if _join_group(root, incident, signature) != group:
                continue
            found = fold_into_open(root, group, incident, log_text)
            if found is not None:
                return CaptureResult(found[0], True, found[1])
            _mark_regression(root, incident, group, window)
            created = _create(root, incident, log_text, inp.audit_lines, context, group)
            if incident.get("regression_of"):  # a person is told (the outbox)
                from incidents import notify

                notify.regressed(root, incident, group)
            return created
    raise IncidentsError(f"the group of {signature!r} kept changing during the capture")


def _join_group(root: Root, incident: dict[str, Any], signature: str) -> str:
    """The capture's group key; a merged signature's new incident records the merge."""
    alias = None
    if os.path.isdir(root.sub(STATE, GROUPS)):  # else no merge ever: grouping not imported
        from incidents import grouping

        alias = grouping.read_alias(root, signature)
    if alias is None:
        incident.pop("group", None)
        return signature
    incident["group"] = {"key": alias[0], "decisions": [alias[1]] if alias[1] else []}
    return alias[0]


def _mark_regression(root: Root, incident: dict[str, Any], group: str, window: int) -> None:
    from incidents.grouping import find_regression, note_regression

    found = find_regression(root, group, window, time.time())
    if found is not None:
        incident.update(found)
        note_regression(root, group, incident)


def _create(
    root: Root,
    incident: dict[str, Any],
    log_text: str,
    audit_lines: list[str],
    context: dict[str, Any],
    group: str | None,
) -> CaptureResult:
    captured: dict[str, Any] = {"occurrences": 1}
    for link in ("regression_of", "recurrence_of"):  # the earlier incident it follows
        if incident.get(link):
            captured[link] = incident[link]
    files = {
        artifacts.INCIDENT: fsutil.dump_json(incident),
        artifacts.STATUS: b"new\n",
        artifacts.LOG_TAIL: log_text.encode("utf-8"),
        artifacts.AUDIT_TAIL: "".join(f"{line}\n" for line in audit_lines).encode("utf-8"),
        artifacts.CONTEXT: context_bytes(context),
        # the bundle's own record of its events, from its first line (incidents.eventlog)
        eventlog.EVENTS: eventlog.encode(
            eventlog.event("captured", incident["created_at"], incident["incident_id"],
                           "captured", captured),
            redact=False,
        ),  # fmt: skip
    }
    store.write_bundle(root, incident["incident_id"], files)
    if group is not None:
        from incidents.grouping import write_open

        write_open(root, group, incident["incident_id"])
    store.mark_dirty(root, incident["incident_id"])
    return CaptureResult(incident["incident_id"], False, incident)


# --- command lines ------------------------------------------------------------------------


def inputs_from_args(args: Args, cfg: CaptureConfig) -> CaptureInput:
    settings, allow, workdirs = cfg.table, cfg.allow, cfg.workdirs
    workdir = args.workdir or os.getcwd()
    try:
        if not _is_dir(workdir):
            raise UsageError(f"--workdir {workdir}: not a directory")
        workdir = check_workdir(os.path.realpath(workdir), workdirs)
    except OSError as exc:  # not ours to look into (/proc/1/root/...)
        raise UsageError(f"--workdir {workdir}: {exc.strerror or exc}") from exc
    return CaptureInput(
        step=args.step,
        message=args.message or "",
        run_id=args.run_id,
        failure_class=args.failure_class,
        error_code=args.error_code,
        exit_code=getattr(args, "exit_code", None),
        log_text=read_log_tail(args.log_file, settings["log_tail_bytes"]) if args.log_file else "",
        audit_lines=(
            read_audit_tail(args.audit_file, settings["audit_tail_lines"])
            if args.audit_file
            else []
        ),
        context=read_context_json(args.context_json) if args.context_json else {},
        python_files=check_targets(args.python_file, workdir, "--python-file"),
        powershell_files=check_targets(args.powershell_file, workdir, "--powershell-file"),
        verify=check_verify(args.verify, allow, workdir),
        workdir=workdir,
        dedupe=settings["dedupe"] and not args.no_dedupe,
    )


def _is_dir(path: str) -> bool:
    """`pathlib.Path.is_dir`'s answer: False when there is no such folder, and an OSError
    when it cannot be looked at (/proc/1/root/...)."""
    import stat

    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def validate_common(args: Args) -> None:
    if not args.step.strip():
        raise UsageError("--step: must not be empty")
    if len(args.step) > 200:
        raise UsageError("--step: at most 200 characters")
    if args.run_id is not None and not args.run_id.strip():
        raise UsageError("--run-id: must not be empty")


def default_message(step: str, exit_code: int | None) -> str:
    """What an empty --message becomes (a `tee` race in a trap leaves it blank)."""
    return f"step {step} failed" + ("" if exit_code is None else f" with exit code {exit_code}")


def root_for(args: Args, notes: list[str]) -> tuple[Root, CaptureConfig]:
    cfg = read_settings(args.config, notes)
    root = resolve_root(args.root, cfg.root)
    if os.path.exists(root.dir) and not os.path.isdir(root.dir):
        raise RootError(f"reports root {root.dir} is not a directory")
    return root, cfg


def warn_notes(notes: list[str], then: str) -> dict[str, Any]:
    """Each problem once on stderr, and the context entry that keeps them in the bundle:
    a problem of ours (the config, an option) never costs the failure itself."""
    notes[:] = list(dict.fromkeys(notes))
    for note in notes:
        sys.stderr.write(f"incidents: warning: {note}; {then}\n")
    return {"capture_warnings": list(notes)} if notes else {}


def print_result(result: CaptureResult, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(result.incident, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(result.incident_id + "\n")


def main_capture(argv: list[str], prog: str = "incidents capture") -> int:
    args = capture_argv.parse(argv) or build_parser(prog).parse_args(argv)
    if args.message is None and not args.ok:
        raise UsageError(f"{prog}: the following arguments are required: --message")
    validate_common(args)
    notes: list[str] = []
    root, cfg = root_for(args, notes)
    if args.ok:
        from incidents.recovery import capture_ok

        capture_ok(root, args.step, args.message, args.failure_class, cfg.table)
        return 0
    inp = inputs_from_args(args, cfg)
    inp.message = inp.message.strip() or default_message(inp.step, inp.exit_code)
    inp.context = {**inp.context, **warn_notes(notes, "captured with the defaults")}
    result = capture(root, inp, cfg.table["max_message_chars"], cfg.table["regression_window_days"])
    print_result(result, args.json)
    return 0


def main(argv: list[str]) -> int:
    """`argv[0]` is `capture` (`incidents.capture_run.main` takes `run`)."""
    try:
        return main_capture(argv[1:])
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
