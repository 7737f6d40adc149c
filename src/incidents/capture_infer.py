"""What capture reads from a failure besides its message: the targets and tests its
output names (`incidents.infer`), and for `incidents run` whether its command is kept
as the incident's reproduction.

Standard library only, like capture.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any

    from incidents.capture import CaptureInput
    from incidents.infer import Scan


def read_failure(inp: CaptureInput, message: str, log_text: str) -> tuple[Scan, dict[str, Any]]:
    """(what the output says failed, the incident fields it adds). With no target given
    (`--python-file`, `--powershell-file`), the targets are the files the output names
    (`infer.targets`: inside the workdir, symlinks followed), set on `inp` and recorded
    with where each came from in `inferred`; the failed tests pytest named are recorded
    there too, as the tests to run again."""
    from incidents.infer import imported_by, scan, targets, tests_inside

    found = scan("\n".join(filter(None, [log_text, message])), inp.tool)
    extra: dict[str, Any] = {}
    if inp.reproduction is not None:
        from incidents.redact import redact_json

        extra["reproduction"] = redact_json(inp.reproduction)
    if not inp.workdir:
        return found, extra
    entries: list[dict[str, Any]] = []
    tests = tests_inside(found, inp.workdir, os.getcwd())
    if not (inp.python_files or inp.powershell_files):
        entries = targets(found, inp.workdir, os.getcwd())
        if tests and not any(e["kind"] == "python" for e in entries):
            # the tests saw a wrong result: no frame names the code, their imports do
            entries += imported_by(tests, inp.workdir, os.getcwd())
        inp.python_files = [e["path"] for e in entries if e["kind"] == "python"]
        inp.powershell_files = [e["path"] for e in entries if e["kind"] == "powershell"]
    if entries or tests:
        extra["inferred"] = {"targets": entries, "tests": tests}
    return found, extra


def tool_of(command: list[str]) -> str:
    """The program a command runs, as its output's source: `ruff` for `ruff check x`,
    `pytest` for `python -m pytest -q`."""
    program = os.path.basename(command[0]) if command else ""
    if program.startswith("python") and len(command) > 2 and command[1] == "-m":
        return command[2]
    return program


def reproduction(
    command: list[str], asked: bool | None, default: bool, refused: str | None
) -> dict[str, Any]:
    """`incidents run`'s command as the incident's `reproduction`: kept (a verification
    command it must pass), or why not: `--no-reproduce`, `[capture] reproduce = false`,
    or the rule that refuses it (`capture_inputs.reproduce_problem`), which stderr says
    too. `asked`: `--reproduce` / `--no-reproduce` / neither (None)."""
    import shlex

    line = shlex.join(command)
    if asked is False or (asked is None and not default):
        refused = "--no-reproduce" if asked is False else "[capture] reproduce = false"
    elif refused is not None:  # the capture is never lost for it: recorded, not re-run
        sys.stderr.write(
            f"incidents: {'--reproduce' if asked else 'no reproduction'}: {line[:300]!r} is "
            f"not a verification command of the incident: {refused}\n"
        )
    return {"command": line, "kept": refused is None, "why": refused}
