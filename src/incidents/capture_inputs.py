"""A capture's inputs read from the command line's files: the tails of --log-file and
--audit-file, the --context-json object, the target files and the --verify commands.

All are validated before capture writes anything (a bad one is a `UsageError` naming its
option), and text is redacted on the way in. Standard library only, like capture.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

from incidents import fsutil
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
    return _SURROGATE.sub(_escape, redact(text))


_SURROGATE = re.compile("[\udc80-\udcff]")  # a byte that did not decode (surrogateescape)


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
    return out


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


def check_targets(files: list[str], workdir: Path, option: str) -> list[str]:
    """Targets must exist and stay under the workdir; stored relative to it."""
    out: list[str] = []
    base = os.path.realpath(workdir)
    for name in files:
        full = os.path.realpath(os.path.join(base, name))
        if os.path.commonpath([base, full]) != base:
            raise UsageError(f"{option} {name}: outside the workdir {base}")
        if not os.path.isfile(full):
            raise UsageError(f"{option} {name}: no such file under {base}")
        out.append(os.path.relpath(full, base))
    return out


def check_verify(commands: list[str]) -> list[str]:
    for cmd in commands:
        try:
            argv = shlex.split(cmd)
        except ValueError as exc:
            raise UsageError(f"--verify {cmd!r}: cannot split into arguments: {exc}") from exc
        if not argv:
            raise UsageError("--verify: empty command")
    return commands
