"""Error signatures: the same failure, repeated, gets the same signature.

`normalize_message` replaces the volatile parts of a message with placeholders, in one
left-to-right pass of one regex (so the result is deterministic and a placeholder is
never rewritten): at each position the first alternative that matches wins, in this
order:

    an existing placeholder   kept as is (normalising twice changes nothing)
    URL                       <url:host>   (scheme and path dropped, host kept; <url> if none)
    e-mail                    <email>
    timestamp, date, time     <ts>         (ISO 8601, RFC 2822, syslog, 12/31/2024, 12:00:01)
    UUID                      <uuid>
    IPv4[:port], IPv6         <ip>
    path                      <path>       (POSIX, ~/, ./, Windows, UNC, relative with a
                                            file extension or two slashes, `name.ext:12`)
    quoted '...' or "..."     <str>        (a quote after a letter is an apostrophe)
    hex id                    <hex>        (0x..., or 7+ hex digits with at least one digit)
    number                    <n>          (ints, floats, with a unit: 30s, 1.5GB, 80%)

then whitespace is collapsed and the result cut to `MAX_MESSAGE` characters at a word
boundary. A number glued to letters (`py311`, `s3`, `utf8`) is part of a word and kept;
after `_` or `-` it is volatile (`run_20260217` -> `run_<n>`).

Stdlib only, imports `re`; the hash for `signature_key` comes from `_blake2` (the
C module behind `hashlib.blake2b`, ~0.3 ms to import against ~3.5 ms for `hashlib`,
which loads OpenSSL), falling back to `hashlib` where it is missing.
"""

from __future__ import annotations

import re

__all__ = ["MAX_MESSAGE", "make_signature", "normalize_message", "signature_key"]

MAX_MESSAGE = 200

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:[ ]?[AaPp][Mm])?"
_ZONE = r"(?:[ ]?(?:Z|UTC|GMT|[+-]\d{2}:?\d{2})(?![A-Za-z]))?"
_PATH_CHAR = r"[\w.+@%~=-]"
_UNIT = (
    r"(?:ns|us|µs|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hrs?|hours?|d|days?"
    r"|[kKMGTP]i?B|[kKMGTP]|B|bytes?|%|x)"
)

_ALTERNATIVES = (
    ("keep", r"<(?:ts|uuid|hex|path|str|n|ip|email|url(?::[^<>\s]*)?)>"),
    ("url", r"\b[A-Za-z][A-Za-z0-9+.-]*://(?:[^/\s@]*@)?(?P<host>[^/\s:?#'\"<>]*)[^\s'\"<>]*"),
    ("email", r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
    (
        "ts",
        r"(?<![\w.])(?:"
        rf"\d{{4}}-\d{{2}}-\d{{2}}(?:[T ]{_TIME})?{_ZONE}"  # ISO 8601
        rf"|\d{{4}}\d{{2}}\d{{2}}T\d{{6}}Z?"  # compact ISO
        rf"|(?:{_DAY},?[ ])?\d{{1,2}}[ ]{_MONTH}[ ]\d{{4}}(?:[ ]{_TIME})?{_ZONE}"  # RFC 2822
        rf"|(?:{_DAY}[ ])?{_MONTH}[ ]+\d{{1,2}}(?:,?[ ]\d{{4}})?(?:[ ]{_TIME})?{_ZONE}"  # syslog
        r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}(?:[ ]" + _TIME + r")?"  # 12/31/2024
        rf"|{_TIME}{_ZONE}"  # 12:00:01
        r")(?![\w])",
    ),
    ("uuid", r"(?<![\w-])[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}(?![\w-])"),
    (
        "ip",
        r"(?<![\w.])(?:"
        r"(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?"
        r"|\[[0-9a-fA-F:]*:[0-9a-fA-F:.]*\](?::\d{1,5})?"
        r"|(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}"
        r"|::1"
        r")(?![\w.])",
    ),
    (
        "path",
        r"(?:"
        r"(?<![\w\\])[A-Za-z]:\\(?:[^\\\s:*?\"'<>|]+\\)*[^\\\s:*?\"'<>|,;)]*"  # C:\dir\file
        r"|\\\\[^\\\s]+\\[^\s:*?\"'<>|,;)]+"  # \\server\share
        rf"|(?<![\w.:/~-])(?:~|\.{{1,2}})?/{_PATH_CHAR}+(?:/{_PATH_CHAR}*)*"  # /abs, ./rel, ~/x
        rf"|(?<![\w.:/~-]){_PATH_CHAR}+(?:/{_PATH_CHAR}+){{2,}}/?"  # a/b/c
        rf"|(?<![\w.:/~-]){_PATH_CHAR}+(?:/{_PATH_CHAR}+)*\.[A-Za-z]\w{{0,7}}"  # a/b.py, b.py
        r"(?=:\d)"  # ... a bare file name only with a line number
        rf"|(?<![\w.:/~-]){_PATH_CHAR}+(?:/{_PATH_CHAR}+)+\.[A-Za-z]\w{{0,7}}(?![\w/])"
        r")(?::\d+(?::\d+)?)?",
    ),
    ("str", r"(?<![A-Za-z0-9])(?:'[^'\n]{0,200}'|\"(?:[^\"\\\n]|\\.){0,200}\")(?![A-Za-z0-9])"),
    ("hex", r"(?<![\w-])(?:0[xX][0-9a-fA-F]+|(?=[a-fA-F]*\d)[0-9a-fA-F]{7,})(?![\w-])"),
    (
        "n",
        rf"(?<![A-Za-z0-9.])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?:[ ]?{_UNIT})?(?![A-Za-z0-9])",
    ),
)

_pattern: re.Pattern[str] | None = None
_space: re.Pattern[str] | None = None


def _replace(m: re.Match[str]) -> str:
    kind = m.lastgroup
    if kind == "keep":
        return m.group(0)
    if kind == "url":
        host = m.group("host").lower()
        return f"<url:{host}>" if host else "<url>"
    return f"<{kind}>"


def normalize_message(message: str) -> str:
    """Replace the volatile parts of `message` so repeats of one failure compare equal."""
    global _pattern, _space
    if _pattern is None or _space is None:
        # `_replace` reads `lastgroup`, so the kind groups must be the outermost ones:
        # `host` sits inside `url`, which closes after it.
        _pattern = re.compile("|".join(f"(?P<{k}>{p})" for k, p in _ALTERNATIVES))
        _space = re.compile(r"\s+")
    text = _space.sub(" ", _pattern.sub(_replace, message)).strip()
    if len(text) > MAX_MESSAGE:
        cut = text.rfind(" ", 0, MAX_MESSAGE + 1)
        text = text[: cut if cut > 0 else MAX_MESSAGE].rstrip()
    return text


def make_signature(failure_class: str, step: str, message: str) -> str:
    """Seed 004's `error_signature`: `"<class> | <step> | <normalised message>"`."""
    return f"{failure_class} | {step} | {normalize_message(message)}"


def signature_key(signature: str) -> str:
    """A stable, filesystem-safe key for a signature: 24 hex digits (96 bits of blake2b)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - CPython always builds _blake2
        from hashlib import blake2b
    return blake2b(signature.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
