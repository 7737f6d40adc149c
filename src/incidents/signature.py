"""Error signatures: the same failure, repeated, gets the same signature.

`normalize_message` replaces the volatile parts of a message with placeholders. A part is
volatile by its *shape* (an id, a hash, a number, a time, an address, a path), never by
being quoted: `Cannot find module 'express'` and `... 'express-session'` are two failures,
while `'3fa2c1b8-...'` is normalised inside its quotes like anywhere else.

Left-to-right passes of one regex (deterministic; a placeholder is never rewritten), again
until nothing changes (the second pass finds nothing in practice): at each position the
first rule of `_RULES` that matches wins, in this order:

    keep          an existing placeholder, kept
    url           <url:host>  scheme, path and query dropped, host kept (<url> if none)
    email         <email>
    keyed_id      <id>        the value after a request/trace/correlation/span/session/host
                              id key, in any spelling: `Request ID: X`, `x-request-id: X`,
                              `"request_id": "X"`, `RequestId=X`, `x-amz-id-2: X`, `cf-ray: X`
    ts            <ts>        ISO 8601, RFC 2822, syslog, 12/31/2024, 12:00:01
    uuid          <uuid>
    ip            <ip>        IPv4[:port], IPv6 (full, compressed, [bracketed]:port)
    hex_groups    <id>        3+ hex groups joined by one of `:` `-` `.` (GitHub's
                              `4C32:E66A2:27EF37:4E976C:683F3085`, MAC addresses)
    path          <path>      POSIX, ~/, ./, Windows, UNC, relative with a file extension
                              or two slashes, `name.ext:12`
    pod           <id>        a Kubernetes pod or ReplicaSet suffix: web-<id>
    hex           <hex>       0x..., or 7+ hex digits with a digit and a letter
    token         <id>        a random-looking run of 10+ letters and digits: mixed case
                              and a digit after a `prefix_` or `prefix-` (req_, cus_,
                              chatcmpl-), or letters and digits alternating 3+ times
    n             <n>         ints, floats, versions, with a unit (30s, 1.5GB, 80%), Go
                              durations (1m30s)

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
NORMALIZATION_VERSION = 3  # 1: every quoted value was <str>; no request ids, pods, tokens
# 2: `host.name:5432` was a path (a bare file name with a line number)

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:[ ]?[AaPp][Mm])?"
_ZONE = r"(?:[ ]?(?:Z|UTC|GMT|[+-]\d{2}:?\d{2})(?![A-Za-z]))?"
_PATH_CHAR = r"[\w.+@%~=-]"
# the extensions a bare `name.ext:12` is taken as a file for (anything else may be a host)
_SOURCE_EXT = (
    r"(?i:py|pyi|pyx|js|mjs|cjs|jsx|ts|tsx|go|rs|java|kt|kts|scala|groovy|gradle|c|h|cc|cpp"
    r"|cxx|hpp|hh|cs|fs|vb|rb|erb|php|pl|pm|lua|r|jl|swift|m|mm|dart|ex|exs|erl|hrl|elm|clj"
    r"|hs|ml|nim|zig|sh|bash|zsh|fish|ps1|psm1|psd1|bat|cmd|sql|tf|tfvars|hcl|yaml|yml|json"
    r"|jsonc|toml|ini|cfg|conf|xml|html|htm|css|scss|sass|less|vue|svelte|md|rst|txt|csv"
    r"|proto|graphql|mk|cmake|lock|env|ipynb|pxd|tpl|j2|jinja|twig)(?![\w.])"
)
_UNIT = (
    r"(?:ns|us|µs|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hrs?|hours?|d|days?"
    r"|[kKMGTP]i?B|[kKMGTP]|B|bytes?|%|x)"
)
_H = "[0-9A-Fa-f]"
_K8S = "[bcdfghj-np-tv-z2-9]"  # the alphabet of Kubernetes' random name suffixes
_ALNUM = "[A-Za-z0-9]"
_ID_KEY = (
    r"(?:x-)?(?:amzn?-|github-|goog-|ms-)?(?:s3[ ]extended[ ]|extended[ ]|client[-_ ]?)?"
    r"(?:request|req|trace|correlation|span|invocation|transaction|session|host)[-_ ]?id"
    r"|x-amz-id-2|cf-ray"
)
_ID_VALUE = r"[^\s\"'<>,;)\]}]"

# (name, placeholder, pattern). Order is precedence at one position; see the docstring.
_RULES: tuple[tuple[str, str, str], ...] = (
    ("keep", "", r"<(?:ts|uuid|hex|path|str|id|n|ip|email|url(?::[^<>\s]*)?)>"),
    (
        "url",
        "<url:host>",
        r"\b[A-Za-z][A-Za-z0-9+.-]*://(?:[^/\s@]*@)?(?P<host>[^/\s:?#'\"<>]*)[^\s'\"<>]*",
    ),
    ("email", "<email>", r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
    (
        "keyed_id",
        "<id>",
        rf"(?P<key>\b(?=[xXaAgGmMsSeEcCrRtTiIhH])(?ai:{_ID_KEY})\b[\"']?[ ]?[:=]?[ ]?[\"']?)"
        # the value: a digit or 12 characters; or <id> (a second pass sees the key again)
        rf"(?:<id>|(?=(?:{_ID_VALUE}*?\d|{_ID_VALUE}{{12}}))(?!<){_ID_VALUE}++(?!<))",
    ),
    (
        "ts",
        "<ts>",
        r"(?<![\w.])(?:"
        r"(?:\d{4}-\d{2}-\d{2}"  # ISO 8601
        rf"|(?:{_DAY},?[ ])?\d{{1,2}}[ ]{_MONTH}[ ]\d{{4}}"  # RFC 2822
        rf"|(?:{_DAY}[ ])?{_MONTH}[ ]+\d{{1,2}}(?:,?[ ]\d{{4}})?"  # syslog
        r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"  # 12/31/2024
        rf")(?:[T ]{_TIME})?{_ZONE}"  # ... each with a time, a zone
        r"|\d{8}T\d{6}Z?"  # compact ISO
        rf"|{_TIME}{_ZONE}"  # 12:00:01
        r")(?![\w])",
    ),
    ("uuid", "<uuid>", rf"(?<![\w-]){_H}{{8}}-(?:{_H}{{4}}-){{3}}{_H}{{12}}(?![\w-])"),
    (
        "ip",
        "<ip>",
        r"(?<![\w.])(?:"
        r"(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?"
        r"|\[[0-9a-fA-F:]*:[0-9a-fA-F:.]*\](?::\d{1,5})?"
        rf"|(?:{_H}{{1,4}}:){{7}}{_H}{{1,4}}"
        rf"|(?=[0-9a-fA-F:]*\d)(?:{_H}{{1,4}}:){{1,7}}:(?:{_H}{{1,4}}(?::{_H}{{1,4}})*)?"
        r"|::1"
        r")(?![\w.])",
    ),
    (
        "hex_groups",
        "<id>",
        rf"(?<![\w:.-])(?=[0-9A-Fa-f:.-]{{8}})(?=[0-9A-Fa-f:.-]*?\d)(?=[0-9A-Fa-f:.-]*?[A-Fa-f])"
        rf"{_H}+(?P<sep>[:.-]){_H}+(?:(?P=sep){_H}+)+(?!\w)(?!(?P=sep)\w)",
    ),
    (
        "path",
        "<path>",
        r"(?=[\w.+@%~=-]*[/\\:.])(?:"  # (a quick test first: most words are no path)
        r"(?<![\w\\])[A-Za-z]:\\(?:[^\\\s:*?\"'<>|]+\\)*[^\\\s:*?\"'<>|,;)]*"  # C:\dir\file
        r"|\\\\[^\\\s]+\\[^\s:*?\"'<>|,;)]+"  # \\server\share
        rf"|(?<![\w.:/~-])(?:~|\.{{1,2}})?/{_PATH_CHAR}+(?:/{_PATH_CHAR}*)*"  # /abs, ./rel, ~/x
        rf"|(?<![\w.:/~-]){_PATH_CHAR}+(?:/{_PATH_CHAR}+){{2,}}/?"  # a/b/c
        rf"|(?<![\w.:/~-]){_PATH_CHAR}+(?:/{_PATH_CHAR}+)+\.[A-Za-z]\w{{0,7}}(?=:\d)"  # a/b.py:3
        # a bare file name only with a line number and a source file's extension: a host
        # and its port (`db.internal:5432`) is an address, whose host is kept like a URL's
        rf"|(?<![\w.:/~-]){_PATH_CHAR}+\.(?:{_SOURCE_EXT})(?=:\d)"
        rf"|(?<![\w.:/~-]){_PATH_CHAR}+(?:/{_PATH_CHAR}+)+\.[A-Za-z]\w{{0,7}}(?![\w/])"
        r")(?::\d+(?::\d+)?)?",
    ),
    (
        "pod",
        "<id>",
        rf"(?<=[a-z0-9]-)(?=[{_K8S[1:-1]}-]*?\d)(?=[{_K8S[1:-1]}-]*?[a-z])"
        rf"(?:{_K8S}{{6,10}}-)?{_K8S}{{5,10}}(?![A-Za-z0-9.-])",
    ),
    (
        "hex",
        "<hex>",
        rf"(?<![A-Za-z0-9])(?:0[xX]{_H}+|(?=[0-9]*[a-fA-F])(?=[a-fA-F]*\d){_H}{{7,}})"
        r"(?![A-Za-z0-9])",
    ),
    (
        "token",
        "<id>",
        rf"(?={_ALNUM}*?\d)(?:(?<=[A-Za-z0-9][_-])(?={_ALNUM}*?[a-z])(?={_ALNUM}*?[A-Z])"
        rf"|(?<![A-Za-z0-9.])(?={_ALNUM}*?(?:[A-Za-z]\d++[A-Za-z]++\d|\d[A-Za-z]++\d++[A-Za-z])))"
        rf"{_ALNUM}{{10,}}+",
    ),
    (
        "n",
        "<n>",
        r"(?<![A-Za-z0-9.])(?:"
        r"(?:\d+(?:\.\d+)?(?:h|ms|us|µs|ns|m|s)){2,}"  # Go durations: 1m30s, 2h0m0.5s
        rf"|[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?:[ ]?{_UNIT})?"
        r")(?![A-Za-z0-9])",
    ),
)

PLACEHOLDERS: dict[str, str] = {name: placeholder for name, placeholder, _ in _RULES[1:]}

_MAX_PASSES = 16  # a bound, never reached: see normalize_steps

# What a text must contain for a rule to match anywhere in it (rules not named: always
# tried). Only the rules a message can need are compiled and tried: the combined pattern
# costs ~4 ms to compile, in a process (capture) that normalises one message. Each test is
# on characters a pass never adds (a placeholder brings `<`, `>`, `:` and lowercase
# letters), so the rules picked for the message serve every later pass too.
_DIGIT = r"\d"  # not a substring: any decimal digit (Unicode's, as `\d` in the rules)
_DIGITS = (_DIGIT,)
_NEEDS: dict[str, tuple[str, ...]] = {  # in the lowercased text
    "keep": ("<",),
    "url": ("://",),
    "email": ("@",),
    "keyed_id": (
        "req",
        "trace",
        "correlation",
        "span",
        "invocation",
        "transaction",
        "session",
        "host",
        "amz-id",
        "cf-ray",
    ),
    "ts": _DIGITS,
    "uuid": ("-",),
    "ip": (*_DIGITS, ":"),
    "hex_groups": _DIGITS,
    "path": ("/", "\\", ":"),
    "pod": _DIGITS,
    "hex": _DIGITS,
    "token": _DIGITS,
    "n": _DIGITS,
}
_compiled: dict[tuple[str, ...], re.Pattern[str] | None] = {}
_space: re.Pattern[str] | None = None
_digit: re.Pattern[str] | None = None


def _rules_for(text: str) -> tuple[str, ...]:
    global _digit
    if _digit is None:
        _digit = re.compile(r"\d")
    lowered, digit = text.lower(), _digit.search(text) is not None
    return tuple(
        name
        for name, _, _ in _RULES
        if any(digit if part == _DIGIT else part in lowered for part in _NEEDS[name])
    )


def _pattern_of(names: tuple[str, ...]) -> re.Pattern[str] | None:
    """The rules `names` in one pattern (None: no rule can match)."""
    if names not in _compiled and names:
        # `_replace` reads `lastgroup`, so the rule groups must be the outermost ones: an
        # inner group (`host`, `key`, `sep`) closes before its rule's group does.
        chosen = "|".join(f"(?P<{n}>{p})" for n, _, p in _RULES if n in names)
        _compiled[names] = re.compile(chosen)
    return _compiled.get(names)


def _replace(m: re.Match[str]) -> str:
    kind = m.lastgroup
    if kind == "keep":
        return m.group(0)
    if kind == "url":
        host = m.group("host").lower()
        return f"<url:{host}>" if host else "<url>"
    if kind == "keyed_id":
        return m.group("key") + "<id>"
    return PLACEHOLDERS[kind or "n"]


def _cut(text: str) -> str:
    cut = text.rfind(" ", 0, MAX_MESSAGE + 1)
    return text[: cut if cut > 0 else MAX_MESSAGE].rstrip()


def normalize_message(message: str) -> str:
    """Replace the volatile parts of `message` so repeats of one failure compare equal."""
    return normalize_steps(message, None)


def normalize_steps(message: str, steps: list[tuple[str, str, str]] | None) -> str:
    """`normalize_message`, appending to `steps` (when given) each replacement it made, in
    order, as `(rule, before, after)`; collapsing whitespace is the rule `space`, cutting
    to `MAX_MESSAGE` the rule `cut`."""
    global _space
    if _space is None:
        _space = re.compile(r"\s+")
    text = _space.sub(" ", message).strip()
    if steps is not None and text != message:
        steps.append(("space", "runs of whitespace, at the ends", "one space, none"))
    pattern = _pattern_of(_rules_for(text))
    replace = _replace if steps is None else _recording(steps)
    # Passes until nothing changes: a replacement can change what its neighbour looks like
    # to a rule (in `ab12cdef/x` the `/x` follows a word; in `<hex>/x` it is a path), so
    # the result is normalised again until it holds, which makes normalising idempotent.
    # Every pass that changes something turns at least one character that is not part of
    # a placeholder into one (or cuts), so this ends; the second pass is the last in practice.
    for _ in range(_MAX_PASSES):
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
        if m.lastgroup != "keep" and after != m.group(0):
            steps.append((m.lastgroup or "", m.group(0), after))
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
