"""`incidents run -- CMD`: run a step's command, and capture it when it fails.

The command always runs and its own exit code always goes back: a problem of ours (the
configuration, an option, the root) is a warning, and the failure is captured with what
is sound (`incidents.capture`). A passing run is news too: it clears the step's blips
(`incidents.recovery`).
"""

from __future__ import annotations

import os
import sys

from incidents.capture import (
    CaptureInput,
    build_parser,
    capture,
    inputs_from_args,
    print_result,
    root_for,
    validate_common,
    warn_notes,
)
from incidents.capture_config import DEFAULTS, CaptureConfig
from incidents.capture_inputs import clip, decode, reproduce_problem
from incidents.errors import IncidentsError, UsageError
from incidents.layout import Root

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from incidents.capture import Args


def _prepare_run(args: Args, notes: list[str]) -> tuple[Root | None, CaptureConfig, CaptureInput]:
    """What a failure of the command will be captured with. A problem here is ours, never
    the step's: it is a note, and the capture keeps what is sound (the defaults, no
    targets); no root at all (a file where it should be) is the one thing that is lost."""
    try:
        validate_common(args)
    except UsageError as exc:
        notes.append(str(exc))
        args.step = args.step.strip()[:200] or "run"
        args.run_id = args.run_id and args.run_id.strip() or None
    root: Root | None = None
    cfg = CaptureConfig(None, dict(DEFAULTS), [], [])
    try:
        root, cfg = root_for(args, notes)
    except IncidentsError as exc:
        notes.append(str(exc))
    try:
        return root, cfg, inputs_from_args(args, cfg)
    except IncidentsError as exc:
        notes.append(f"{exc} (the failure is captured without these options)")
    bare = CaptureInput(step=args.step, message=args.message or "", run_id=args.run_id)
    bare.failure_class, bare.error_code = args.failure_class, args.error_code
    bare.workdir = os.path.realpath(os.getcwd())
    bare.dedupe = cfg.table["dedupe"] and not args.no_dedupe
    return root, cfg, bare


def main_run(argv: list[str], prog: str = "incidents run") -> int:
    import shlex

    from incidents.capture_infer import reproduction, tool_of
    from incidents.proc import run_tee

    args = build_parser(prog, for_run=True).parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError(f"{prog}: give the command after --, e.g. {prog} --step build -- make")
    notes: list[str] = []
    timeout = args.timeout
    if timeout is not None and not timeout > 0:
        notes.append(f"--timeout {timeout}: must be positive (the command runs without one)")
        timeout = None
    root, cfg, inp = _prepare_run(args, notes)
    settings = cfg.table
    kept = warn_notes(notes, "the command runs all the same")
    reproduce = settings["reproduce"] if args.reproduce is None else args.reproduce
    refused = reproduce_problem(command, cfg.allow, inp.workdir) if reproduce else None
    result = run_tee(command, timeout=timeout, tail_bytes=settings["log_tail_bytes"])
    status = result.exit_status
    if status == 0:
        if root is not None:
            from incidents.recovery import run_passed

            run_passed(root, args.step, shlex.join(command))
        return 0
    if root is None:
        sys.stderr.write(f"incidents: {command[0]} failed ({status}); not captured: no root\n")
        return status
    inp.reproduction = reproduction(command, args.reproduce, settings["reproduce"], refused)
    if inp.reproduction["kept"]:
        inp.verify = list(dict.fromkeys([*inp.verify, inp.reproduction["command"]]))
    inp.tool = tool_of(command)
    inp.exit_code = status
    inp.timed_out = result.timed_out
    if not inp.message.strip():
        what = result.error or (f"exited with {status}")
        inp.message = f"{shlex.join(command)[:300]}: {what}"
    inp.log_text = clip(
        "\n".join(filter(None, [inp.log_text, decode(result.tail)])), settings["log_tail_bytes"]
    )
    from incidents.capture_env import user_env

    inp.context = {
        **inp.context,
        "command": command,
        "env": user_env(),  # names, and values but secrets': the verdict runs it as the user
        "duration_s": round(result.duration_s, 3),
        "timed_out": result.timed_out,
        **kept,
    }
    try:
        captured = capture(
            root, inp, settings["max_message_chars"], settings["regression_window_days"]
        )
    except (IncidentsError, OSError) as exc:  # the step's own exit code still goes back
        sys.stderr.write(f"incidents: {command[0]} failed ({status}); not captured: {exc}\n")
        return status
    sys.stderr.write(
        f"incidents: {command[0]} failed ({status}); incident {captured.incident_id}\n"
    )
    if args.json:
        print_result(captured, True)
    return status


def main(argv: list[str]) -> int:
    """`argv[0]` is `run`."""
    try:
        return main_run(argv[1:])
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
