"""A capture's inputs read from the command line's files: the tails of --log-file and
--audit-file, the --context-json object, the target files and the --verify commands.

All are validated before capture writes anything (a bad one is a `UsageError` naming its
option), and text is redacted on the way in. Standard library only, like capture.
"""

from __future__ import annotations

import json
import os
import re
import sys

from incidents import artifacts, fsutil
from incidents.errors import IncidentsError, UsageError

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any


def _encoding(data: bytes) -> tuple[str, int]:
    """(codec, bytes to skip): a BOM says; else UTF-16 text shows as a NUL in every other
    byte (Windows PowerShell 5.1 writes logs that way); else UTF-8."""
    for bom, codec in (
        (b"\xef\xbb\xbf", "utf-8"),
        (b"\xff\xfe", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be"),
    ):
        if data.startswith(bom):
            return codec, len(bom)
    sample = data[:4096]
    half = len(sample) // 2
    if half >= 8:
        even, odd = sample[0::2].count(0), sample[1::2].count(0)
        if odd > 0.4 * half and even < 0.05 * half:
            return "utf-16-le", 0
        if even > 0.4 * half and odd < 0.05 * half:
            return "utf-16-be", 0
    return "utf-8", 0


def decode(data: bytes, *, cut: bool = False) -> str:
    """Text for a bundle, redacted: bytes that do not decode are kept visibly as \\xNN
    escapes, never dropped. They are escaped after redaction: a secret written in another
    encoding (Latin-1, say) must not hide behind a backslash from the value patterns.
    `cut`: the data was cut at the front, so its first line is partial and dropped."""
    from incidents.redact import redact

    codec, skip = _encoding(data)
    data = data[skip:]
    if codec.startswith("utf-16") and len(data) % 2:
        data = data[1:] if cut else data[:-1]  # a tail cut in the middle of a unit
    text = data.decode(codec, errors="surrogateescape" if codec == "utf-8" else "replace")
    if cut:
        nl = text.find("\n")
        if 0 <= nl < 4096:
            text = text[nl + 1 :]
    text = redact(text)
    if not _has_surrogate(text):
        return text
    return re.sub("[\udc80-\udcff]", _escape, text)  # a byte that did not decode


def _has_surrogate(text: str) -> bool:
    """A byte that did not decode (surrogateescape), found without compiling a pattern:
    the text encodes as UTF-8 only when it has none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _escape(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group()) - 0xDC00:02x}"


def read_log_tail(path: str, max_bytes: int) -> str:
    try:
        data = fsutil.tail_bytes(path, max_bytes)
    except OSError as exc:
        raise UsageError(f"--log-file {path}: cannot read: {exc.strerror or exc}") from exc
    return clip(decode(data, cut=len(data) == max_bytes), max_bytes)


def clip(text: str, max_bytes: int) -> str:
    """The end of `text` in at most `max_bytes` of UTF-8 (escapes can make text longer)."""
    data = text.encode("utf-8")
    return text if len(data) <= max_bytes else data[-max_bytes:].decode("utf-8", "ignore")


def read_audit_tail(path: str, max_lines: int) -> list[str]:
    from incidents.redact import redact, redact_json

    try:
        data = fsutil.tail_bytes(path, max(64 * 1024, max_lines * 4096))
    except OSError as exc:
        raise UsageError(f"--audit-file {path}: cannot read: {exc.strerror or exc}") from exc
    lines = [ln for ln in data.split(b"\n") if ln.strip()][-max_lines:]
    out = []
    for raw in lines:
        try:
            doc = fsutil.parse_json_strict(raw, path)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            entry = redact_json(doc)
        except (IncidentsError, ValueError) as exc:
            reason = exc.reason if hasattr(exc, "reason") else str(exc)
            entry = {"raw": redact(decode(raw)), "invalid": str(reason)}
        out.append(json.dumps(entry, ensure_ascii=False, allow_nan=False))
    return _within_cap(out)


def _within_cap(lines: list[str]) -> list[str]:
    """The last lines that fit audit_tail.jsonl's cap in the bundle-file table."""
    from incidents.bundle_files import cap_of

    room = cap_of(artifacts.AUDIT_TAIL)
    kept = len(lines)
    while kept > 0 and room - (len(lines[kept - 1].encode("utf-8")) + 1) >= 0:
        room -= len(lines[kept - 1].encode("utf-8")) + 1
        kept -= 1
    return lines[kept:]


def read_context_json(source: str) -> dict[str, Any]:
    try:
        if source == "-":
            data = sys.stdin.buffer.read(fsutil.JSON_MAX_BYTES + 1)
            if len(data) > fsutil.JSON_MAX_BYTES:
                raise UsageError("--context-json -: more than 1 MiB on standard input")
        else:
            data = fsutil.read_regular_file(source)
    except FileNotFoundError as exc:
        raise UsageError(f"--context-json {source}: no such file") from exc
    except OSError as exc:
        raise UsageError(f"--context-json {source}: cannot read: {exc.strerror or exc}") from exc
    except IncidentsError as exc:
        raise UsageError(f"--context-json {exc}") from exc
    try:
        doc = fsutil.parse_json_strict(data, source)
    except IncidentsError as exc:
        raise UsageError(f"--context-json {exc}") from exc
    if not isinstance(doc, dict):
        raise UsageError(
            f"--context-json {source}: must be a JSON object, got {type(doc).__name__}"
        )
    return doc


def check_targets(files: list[str], workdir: str, option: str) -> list[str]:
    """Targets must exist and resolve inside the workdir (`bundle_rules.resolve_target`,
    the rule the step service applies again at pickup); stored relative to it."""
    from incidents.bundle_rules import resolve_target

    out: list[str] = []
    base = os.path.realpath(workdir)
    for name in files:
        rel, why = resolve_target(name, base)
        if rel is None:
            raise UsageError(f"{option} {name}: {why}")
        if not os.path.isfile(os.path.join(base, rel)):
            raise UsageError(f"{option} {name}: no such file under {base}")
        out.append(rel)
    return out


def check_verify(commands: list[str], allow: list[str], workdir: str) -> list[str]:
    """Verification commands must split and be allowed (`incidents.allowlist`, through
    `bundle_rules.command_problems`, the rule the step service applies again at pickup).
    `allow`: `[verification] allow`."""
    from incidents.bundle_rules import command_problems

    for problem in command_problems(commands, allow, workdir):
        raise UsageError(f"--verify {problem.value!r}: {problem.rule}")
    return commands


def check_workdir(workdir: str, allowed: list[str]) -> str:
    """The workdir must lie under one of `[verification] workdirs` when they are set."""
    from incidents.bundle_rules import workdir_problem

    problem = workdir_problem(workdir, allowed)
    if problem is not None:
        raise UsageError(f"--workdir {workdir}: {problem}")
    return workdir


def context_bytes(context: dict[str, Any]) -> bytes:
    """context.json as laid out for people, or compact when that is over its cap in the
    bundle-file table (1 MiB of --context-json, indented, can be three times that)."""
    from incidents.bundle_files import cap_of

    data = fsutil.dump_json(context)
    if len(data) <= cap_of(artifacts.CONTEXT):
        return data
    compact = json.dumps(context, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    data = (compact + "\n").encode("utf-8")
    if len(data) > cap_of(artifacts.CONTEXT):
        raise UsageError(f"--context-json: over {cap_of(artifacts.CONTEXT)} bytes in context.json")
    return data


def reproduce_problem(command: list[str], allow: list[str], workdir: str) -> str | None:
    """Why the failed command of `incidents run` cannot be re-run as the incident's
    verification command, or None. The rules of `--verify` (`bundle_rules`, the allowlist
    `allow`, applied again at pickup), and two of its own: the check runs commands in the
    workdir, so the command must have run there; and a command a secret was redacted from
    is not the command that failed."""
    import shlex

    from incidents.bundle_rules import command_problems
    from incidents.redact import redact

    line = shlex.join(command)
    if os.path.realpath(os.getcwd()) != os.path.realpath(workdir):
        return f"it ran in {os.getcwd()}, and verification runs in the workdir {workdir}"
    if redact(line) != line:
        return "it contains a secret, which is redacted from the incident"
    for problem in command_problems([line], allow, workdir):
        return f"[verification] allowlist: {problem.rule}"
    return None
