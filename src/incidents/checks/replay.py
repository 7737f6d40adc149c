"""`incidents check` on unchanged inputs: replay the last report, run nothing.

ccache's "direct mode". After computing a report, the full path stores a manifest in the
checks cache, keyed by everything known before pydantic or typer load: incidents'
version, the interpreter, the working directory, the arguments, the bytes of the config
file and PATH. The manifest holds every input the engine read (incidents.checks.inputs)
and the size and mtime of every incidents module the full path loaded, the report as a
warm re-run would print it, and the exit code. `try_replay`, tried by
`incidents.cli.main` before typer loads, recomputes those inputs and replays the report
only if all are equal; on anything else the full path runs. A report with an
infrastructure failure is never replayed.

Stdlib only, and light: no dataclasses (inspect), tomllib brings typing anyway
(checked by tests/checks/test_replay.py).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NamedTuple

import incidents
from incidents import output
from incidents.checks.cache import FindingsCache, default_cache_dir, make_key
from incidents.checks.inputs import Inputs, unchanged
from incidents.config_file import beside, find_config, parse_raw
from incidents.errors import IncidentsError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

FORMAT = 2  # of the manifest
OFF_ENV = "INCIDENTS_NO_REPLAY"  # set (non-empty): always take the full path
HEADERS = ["where", "tool", "code", "category", "kind", "message"]
_FLAGS = ("--json", "--strict")
_VALUED = ("--tools", "--config")


class Request(NamedTuple):
    """What `incidents check` was asked, normalized: the part of the key from the CLI."""

    files: tuple[str, ...]
    tools: tuple[str, ...] | None
    strict: bool
    config: str | None
    as_json: bool = False  # not in the key: the same report, printed another way


class Where(NamedTuple):
    key: str
    cache: FindingsCache


class Printout(NamedTuple):
    """What `incidents check` prints: a JSON document or text lines, and stderr lines."""

    doc: dict[str, Any] | None
    lines: list[str]
    errors: list[str]


def parse_tools(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = tuple(t.strip() for t in value.split(",") if t.strip())
    if not names:
        raise UsageError("--tools: give at least one profile name")
    return names


def parse_args(args: Sequence[str]) -> Request | None:
    """`check`'s arguments as typer reads them; None for anything else (--help, a typo)."""
    files: list[str] = []
    options: dict[str, str] = {}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            files.extend(rest)
            break
        if not arg.startswith("-"):
            files.append(arg)
            continue
        name, eq, value = arg.partition("=")
        if name in options or (name in _FLAGS and eq) or name not in (*_FLAGS, *_VALUED):
            return None
        if name in _VALUED and not eq:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        options[name] = value
    return Request(
        files=tuple(files),
        tools=parse_tools(options.get("--tools")),
        strict="--strict" in options,
        config=options.get("--config"),
        as_json="--json" in options,
    )


def locate(request: Request) -> Where | None:
    """The manifest's key and cache; None when the cache is off. Reads only the config
    file (the same lookup as load_config); raises ConfigError and OSError."""
    path = find_config(request.config)
    data = path.read_bytes() if path is not None else b""
    raw = parse_raw(path, data) if path is not None else {}
    checks = raw.get("checks", {})
    if not isinstance(checks, dict) or checks.get("cache", True) is not True:
        return None
    cache_dir = checks.get("cache_dir")
    if path is not None and isinstance(cache_dir, str) and cache_dir:
        # as commands.check._settings and the engine resolve it
        root = Path(beside(path, cache_dir))
    elif cache_dir is None or cache_dir == "":
        root = default_cache_dir()
    else:
        return None
    key = make_key(
        "incidents check manifest", str(FORMAT), incidents.__version__, sys.version, sys.executable, str(Path(os.getcwd()).resolve()),
        json.dumps([request.files, request.tools, request.strict]),
        str(path or ""), data, os.environ.get("PATH", ""),
    )  # fmt: skip
    return Where(key, FindingsCache(root))


# -- the fast path ------------------------------------------------------------------


def try_replay(args: Sequence[str]) -> int | None:
    """`incidents check ARGS` answered from its manifest (printed, exit code returned),
    or None: the full path must run. Never raises for what it cannot handle."""
    if os.environ.get(OFF_ENV):
        return None
    try:
        request = parse_args(args)
        found = replayable(request) if request is not None else None
        if request is None or found is None:
            return None
        doc, exit_code = found
        printout = render(doc, request.as_json)
    except Exception:  # never a wrong answer, never a crash: the full path decides
        return None
    emit(printout)
    return exit_code


def replayable(request: Request) -> tuple[dict[str, Any], int] | None:
    """(the report as the full path would print it now, its exit code), if every input
    the manifest recorded is unchanged."""
    where = locate(request)
    manifest = where.cache.get_doc(where.key) if where is not None else None
    if manifest is None or manifest.get("format") != FORMAT:
        return None
    report, exit_code, facts = manifest["report"], manifest["exit_code"], manifest["facts"]
    if not isinstance(report, dict) or report["infra_failures"] or not isinstance(exit_code, int):
        return None
    if not isinstance(facts, list) or not {"targets", "source"} <= {f[0] for f in facts}:
        return None
    if not unchanged(facts):
        return None
    from datetime import UTC, datetime

    return {**report, "generated_at": datetime.now(UTC).isoformat()}, exit_code


# -- the full path's side -----------------------------------------------------------


def locate_quietly(request: Request) -> Where | None:
    """`locate` for the full path: a config it cannot read is load_config's to report."""
    try:
        return locate(request)
    except (IncidentsError, OSError, ValueError):
        return None


def store(where: Where, request: Request, inputs: Inputs, doc: dict[str, Any], code: int) -> None:
    """After a full run: keep its manifest, unless replaying it could be wrong."""
    inputs.own_code()  # again: a module edited during the run is a refusal
    if doc["infra_failures"] or inputs.refusals:
        return
    again = locate_quietly(request)
    if again is None or again.key != where.key:  # the config or incidents changed meanwhile
        return
    facts = inputs.recorded()
    if not unchanged(facts):  # an input changed while the tools ran
        return
    report = {**doc, "tool_runs": inputs.runs}
    where.cache.put_doc(
        where.key, {"format": FORMAT, "facts": facts, "report": report, "exit_code": code}
    )


# -- printing (both paths) ----------------------------------------------------------


def render(doc: dict[str, Any], as_json: bool) -> Printout:
    """The report as `incidents check` prints it: a table or JSON, infra failures on stderr."""
    infra = doc["infra_failures"]
    if as_json:
        return Printout(doc, [], [f"infra failure: {i['tool']}: {i['reason']}" for i in infra])
    lines: list[str] = []
    if doc["issues"]:
        rows = [
            [
                f"{f['path']}:{f['line'] or 0}:{f['column'] or 0}",
                f["tool"],
                f["code"] or "",
                f["category"],
                "hard" if f["hard"] else "style",
                f["message"].splitlines()[0][:120] if f["message"] else "",
            ]
            for f in doc["issues"]
        ]
        lines.append(output.table(HEADERS, rows))
    runs = ", ".join(
        f"{r['tool']} {'cached' if r['cached'] else format(r['duration_s'], '.2f') + 's'}"
        for r in doc["tool_runs"]
    )
    s = doc["summary"]
    lines.append(
        f"{s['total_issues']} issue(s): {s['hard_error_count']} hard, "
        f"{s['style_error_count']} style" + (f" [{runs}]" if runs else "")
    )
    errors = []
    for i in infra:
        tail = i["stderr_tail"]
        detail = f": {tail.splitlines()[-1]}" if tail.strip() else ""
        errors.append(f"infra failure: {i['tool']}: {i['reason']}{detail}")
    return Printout(None, lines, errors)


def emit(printout: Printout) -> None:
    if printout.doc is not None:
        output.out_json(printout.doc)
    for line in printout.lines:
        output.out(line)
    for line in printout.errors:
        output.err(line)
