"""Error signatures: the same failure, repeated, gets the same signature.

`normalize_message` replaces the volatile parts of a message with placeholders. A part is
volatile by its *shape* (an id, a hash, a number, a time, an address, a path), never by
being quoted: `Cannot find module 'express'` and `... 'express-session'` are two failures,
while `'3fa2c1b8-...'` is normalised inside its quotes like anywhere else.

Left-to-right passes of one regex (deterministic; a placeholder is never rewritten), again
until nothing changes: at each position the first rule of `incidents.signature_rules`
that matches wins (that module lists them, in order).

Whitespace is collapsed first; the result is cut to `MAX_MESSAGE` characters at a word
boundary. A number glued to letters (`py311`, `s3`, `utf8`) is part of a word and kept;
after `_` or `-` it is volatile (`run_20260217` -> `run_<n>`). A quoted value stays, so
`KeyError: 'user_id'` and `KeyError: 'order_id'` are two failures.

`NORMALIZATION_VERSION` names these rules. Incidents record it (`signature_inputs`); an
incident whose signature was made by older rules is matched by its signature recomputed
from its stored message (`incidents.fingerprint.current_signature`).

Stdlib only, imports `re`; patterns compiled on first use. The hash for `signature_key`
comes from `_blake2` (the C module behind `hashlib.blake2b`, ~0.3 ms to import against
~3.5 ms for `hashlib`, which loads OpenSSL), falling back to `hashlib` where it is missing.
"""

from __future__ import annotations

import re

from incidents.signature_rules import (
    DIGIT,
    KEPT,
    MAX_NAME,
    MAX_PASSES,
    NEEDS,
    PLACEHOLDERS,
    RULES,
    SEGMENT,
)

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from collections.abc import Callable


__all__ = [
    "MAX_MESSAGE",
    "NORMALIZATION_VERSION",
    "PLACEHOLDERS",
    "join_signature",
    "make_signature",
    "normalize_message",
    "normalize_steps",
    "signature_key",
]

MAX_MESSAGE = 200
NORMALIZATION_VERSION = 7  # 1: every quoted value was <str>; no request ids, pods, tokens
# 2: `host.name:5432` was a path (a bare file name with a line number)
# 3: a URL kept only its host, every path was <path>, every number <n> (error codes too)
# 4: temporary folders' random names (tempfile's, pytest's, `venv-a1b2c3`) and klog's
#    header (`E1011 12:15:03.532199 12345`) were kept
# 5: a time with `_` for `:` and `.` in a path's name (npm's `T09_50_56_130Z-debug.log`) was kept
# 6: made of the message alone (`run`: the command and exit code; a full disk's file kept)

_compiled: dict[tuple[str, ...], re.Pattern[str] | None] = {}
_digit: re.Pattern[str] | None = None


def _has_digit(text: str) -> bool:
    """Whether `text` holds a digit as the pattern `\\d` sees one (any Unicode decimal
    digit): ten substring tests for ASCII, the pattern, compiled only then, otherwise."""
    if text.isascii():
        return any(d in text for d in "0123456789")
    global _digit
    if _digit is None:
        _digit = re.compile(r"\d")
    return _digit.search(text) is not None


def _rules_for(text: str) -> tuple[str, ...]:
    lowered, digit = text.lower(), _has_digit(text)
    return tuple(
        name
        for name, _, _ in RULES
        if any(digit if part == DIGIT else part in lowered for part in NEEDS[name])
    )


def _pattern_of(names: tuple[str, ...]) -> re.Pattern[str] | None:
    """The rules `names` in one pattern (None: no rule can match)."""
    if names not in _compiled and names:
        # `_replace` reads `lastgroup`, so the rule groups must be the outermost ones: an
        # inner group (`host`, `key`, `sep`) closes before its rule's group does.
        chosen = "|".join(f"(?P<{n}>{p})" for n, _, p in RULES if n in names)
        _compiled[names] = re.compile(chosen)
    return _compiled.get(names)


def _replace(m: re.Match[str]) -> str:
    kind = m.lastgroup
    if kind in KEPT:
        return m.group(0)
    if kind == "url":
        return _url(m)
    if kind == "path":
        return _path(m.group(0))
    if kind == "keyed_id":
        return m.group("key") + "<id>"
    if kind == "email":
        return f"<email:{m.group('domain').lower()}>"
    return PLACEHOLDERS[kind or "n"]


_segment_pattern: re.Pattern[str] | None = None
_version: re.Pattern[str] | None = None
_line: re.Pattern[str] | None = None


def _segment(text: str, host: bool = False) -> str:
    """One segment of a URL's path or a path's name, its volatile parts in braces: a
    number or a version that is the whole segment (`123`, `v2.1.0`; `v1` stays), a dotted
    version in it (`left-pad-1.3.0.tgz` -> `left-pad-{n}.tgz`), a hash, an id, a uuid, a
    date, an address; a number in a name stays (`file_1.py`, `12.go`: files of those
    names). A host (`host`) keeps its numbers: `us-east-1`, and `{ip}` for an address."""
    global _version, _segment_pattern
    if not any(c.isdigit() for c in text):
        return text  # every volatile shape has a digit (a uuid of letters only: never)
    if _version is None:
        _version = re.compile(r"\d+(?:\.\d+)*|[vV]\d+(?:\.\d+)+")  # not an API's v1
    if _segment_pattern is None:
        _segment_pattern = re.compile(SEGMENT)
    if not host and _version.fullmatch(text):
        return "{n}"

    def brace(m: re.Match[str]) -> str:
        kind = m.lastgroup or "n"
        if host and kind == "n":
            return m.group(0)
        return "{" + PLACEHOLDERS[kind][1:-1] + "}"

    return _segment_pattern.sub(brace, text)


def _name(text: str) -> str:
    return text if len(text) <= MAX_NAME else text[:MAX_NAME] + "..."


def _url(m: re.Match[str]) -> str:
    """`<url:host/path>`: the host and the path's names kept, their volatile segments in
    braces, the port dropped, a query or fragment `?{query}`. Without a host (`file:///`)
    the path is a local one: its last two names, as for an absolute path."""
    host = _segment(m.group("host").lower(), host=True)
    global _line
    if _line is None:
        _line = re.compile(r"(?::\d+){1,2}$")
    upath = _line.sub("", m.group("upath") or "")  # a stack frame's line and column
    segments = [_segment(part) for part in upath.split("/") if part]
    if not host:
        segments = ["", *segments[-2:]] if segments else []
    name = "/".join([host, *segments] if host else segments)
    name += "?{query}" if m.group("query") else ""
    return f"<url:{_name(name)}>" if name else "<url>"


def _path(text: str) -> str:
    """A path: relative (`./routes/users`, `src/app/models.py`) it is a name, kept with its
    volatile segments in braces; absolute (`/srv/app/x.py`, `~/x`, `C:\\Users\\bob\\x.ps1`)
    its start is the machine's (a checkout, a home, a temp folder), so only its last two
    names below any home or temp folder are kept: `<path:app/x.py>`. A line and column
    (`:12:5`) go."""
    global _line
    if _line is None:
        _line = re.compile(r"(?::\d+){1,2}$")
    text = _line.sub("", text)
    drive = text[1:3] in (":\\", ":/")
    if not (drive or text[:1] in ("/", "~", "\\")):
        sep = "\\" if "\\" in text else "/"
        return sep.join(p if p in ("", ".", "..", "~") else _segment(p) for p in text.split(sep))
    parts = [p for p in text.replace("\\", "/").split("/") if p and p not in (".", "~")]
    parts = parts[1:] if drive else parts
    from incidents.signature_paths import below_machine, temp_name

    start = min(max(below_machine(parts), len(parts) - 2), len(parts) - 1)
    names = [_segment(temp_name(parts, i)) for i in range(max(start, 0), len(parts))]
    return f"<path:{_name('/'.join(names))}>" if names else "<path>"


def _cut(text: str) -> str:
    cut = text.rfind(" ", 0, MAX_MESSAGE + 1)
    return text[: cut if cut > 0 else MAX_MESSAGE].rstrip()


def normalize_message(message: str) -> str:
    """Replace the volatile parts of `message` so repeats of one failure compare equal."""
    return normalize_steps(message, None)


def normalize_steps(message: str, steps: list[tuple[str, str, str]] | None) -> str:
    """`normalize_message`, appending to `steps` (when given) each replacement it made, in
    order, as `(rule, before, after)`; collapsing whitespace is the rule `space`, cutting
    to `MAX_MESSAGE` the rule `cut`, and an error code kept is `("code", code, code)`."""
    text = " ".join(message.split())  # as `\s+` -> " " and strip(): both use str.isspace
    if steps is not None and text != message:
        steps.append(("space", "runs of whitespace, at the ends", "one space, none"))
    text = text[: 16 * MAX_MESSAGE]  # bounded input: no placeholder is 16x shorter than its text
    pattern = _pattern_of(_rules_for(text))
    replace = _replace if steps is None else _recording(steps)
    # Passes until nothing changes: a replacement can change what its neighbour looks like
    # to a rule (in `ab12cdef/x` the `/x` follows a word; in `<hex>/x` it is a path), so
    # the result is normalised again until it holds, which makes normalising idempotent.
    # Every pass that changes something turns at least one character that is not part of
    # a placeholder into one (or cuts), so this ends; the second pass is the last in practice.
    for _ in range(MAX_PASSES):
        new = text if pattern is None else pattern.sub(replace, text)
        if len(new) > MAX_MESSAGE:
            cut = _cut(new)
            if steps is not None:
                steps.append(("cut", f"{len(new)} characters", f"the first {len(cut)}"))
            new = cut
        if new == text:
            break
        text = new
    return text


def _recording(steps: list[tuple[str, str, str]]) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        after = _replace(m)
        if m.lastgroup not in KEPT and after != m.group(0):
            steps.append((m.lastgroup or "", m.group(0), after))
        elif m.lastgroup == "code" and ("code", after, after) not in steps:
            steps.append(("code", after, after))  # kept: shown, so a reader sees why
        return after

    return replace


def join_signature(failure_class: str, step: str, normalized: str) -> str:
    """Seed 004's `error_signature`: `"<class> | <step> | <normalised message>"`."""
    return f"{failure_class} | {step} | {normalized}"


def make_signature(failure_class: str, step: str, message: str) -> str:
    return join_signature(failure_class, step, normalize_message(message))


def signature_key(signature: str) -> str:
    """A stable, filesystem-safe key for a signature: 24 hex digits (96 bits of blake2b)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - CPython always builds _blake2
        from hashlib import blake2b
    return blake2b(signature.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
