"""What a signature is made of: what failed, not the command that ran.

`basis` turns what a failure's output says (`incidents.infer.Scan`) into one line: the
failing tests with their exception, the tools' codes with the files they name, else the
exception's type and message. Each part is sorted and kept once, so the same failure
prints the same basis however its tools order their lines, and two different failures
of one command (another test, another code, another file) get two. When the output says
nothing of the kind the basis is the message (for `incidents run`, the command line and
its exit code).

A failure of a resource the machine lacks (the disk is full, a host name does not
resolve, memory or file descriptors ran out) is the same failure whatever was being
written, fetched or cloned when it happened: its basis is the failure alone (with the
host that did not resolve), never the file or repository that was in hand. What a
failure is about (the package a registry did not find, the test that failed, the
variable that is unset) stays in the basis: it is not one of these.

Stdlib only (the capture path).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from incidents.infer import Scan

__all__ = ["basis", "incidental"]

MAX_PARTS = 8  # tests or findings a basis names: the first, sorted (a count would vary)
MAX_BASIS = 1000

# the failures of a missing resource, each as (pattern, canonical text); a `host` group
# is kept. Literal alternatives with bounded tails: linear on any text.
_HOST = r"(?P<host>[A-Za-z0-9][A-Za-z0-9.-]{0,252})"
_RESOURCES = (
    (r"no space left on device|\bENOSPC\b", "no space left on device"),
    (r"disk quota exceeded|\bEDQUOT\b", "disk quota exceeded"),
    (r"too many open files|\bEMFILE\b", "too many open files"),
    (r"cannot allocate memory|\bENOMEM\b|\bMemoryError\b|out of memory", "out of memory"),
    (rf"could not resolve host:?\s{{0,3}}{_HOST}", "could not resolve host"),
    (rf"\bgetaddrinfo (?:ENOTFOUND|EAI_AGAIN)\s{{1,3}}{_HOST}", "could not resolve host"),
    (
        r"temporary failure in name resolution|name or service not known"
        r"|nodename nor servname provided|no such host is known",
        "could not resolve host",
    ),
)
_resource: re.Pattern[str] | None = None


def incidental(text: str) -> str | None:
    """The canonical failure when `text` is a missing resource's (with the host that did
    not resolve), else None. Only the first 4000 characters are read."""
    global _resource
    head = text[:4000]
    lowered = head.lower()
    if not any(w in lowered for w in _WORDS):
        return None  # most failures: no pattern compiled on the capture path
    if _resource is None:
        _resource = re.compile(
            "|".join(f"(?P<r{i}>{p})" for i, (p, _) in enumerate(_RESOURCES)).replace(
                "(?P<host>", "(?:"
            ),
            re.IGNORECASE,
        )
    m = _resource.search(head)
    if m is None:
        return None
    index = int((m.lastgroup or "r0")[1:])
    canonical = _RESOURCES[index][1]
    host = _host_of(index, head[m.start() : m.end()])
    return f"{canonical}: {host}" if host else canonical


_WORDS = (
    "space",
    "quota",
    "enospc",
    "edquot",
    "open files",
    "emfile",
    "memory",
    "enomem",
    "resolve",
    "getaddrinfo",
    "name resolution",
    "service not known",
    "servname",
    "no such host",
)
_host_patterns: dict[int, re.Pattern[str]] = {}


def _host_of(index: int, matched: str) -> str:
    pattern_text = _RESOURCES[index][0]
    if "(?P<host>" not in pattern_text:
        return ""
    pattern = _host_patterns.get(index)
    if pattern is None:
        pattern = _host_patterns[index] = re.compile(pattern_text, re.IGNORECASE)
    m = pattern.search(matched)
    return m.group("host").lower().rstrip(".") if m is not None else ""


def basis(found: Scan | None, message: str) -> tuple[str, str]:
    """(what the signature is made of, where it came from: `failure` or `message`)."""
    parts: list[str] = []
    if found is not None:
        tests = sorted(
            set(f for f in found.findings if "::" in f or f.endswith(" collection error"))
        )
        tools = sorted(set(found.findings) - set(tests))
        parts = tests[:MAX_PARTS] + tools[:MAX_PARTS]
        if not parts and found.exception:
            parts = [found.exception]
    text = "; ".join(parts)
    resource = incidental(text) if text else None
    if resource is None and not tests_or_tools(found):
        resource = incidental(message)
    if resource is not None:
        return resource, "failure"
    if text:
        return text[:MAX_BASIS], "failure"
    return message, "message"


def tests_or_tools(found: Scan | None) -> bool:
    """The output names failing tests or tools' findings (not only an exception)."""
    return found is not None and bool(found.findings)
