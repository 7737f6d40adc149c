"""What a failure a person must act on names as missing, and what that person should do.

An `env` or `never_retry` failure goes to a person at once (`incidents.fsm`): no fixer
can set a variable, grant a permission or mend DNS, and one that "fixes" the code by
defaulting the variable hides the failure. The escalation's headline says what is
missing, read from the failure's own output (its message and log tail, the last line
that names something wins: the end of a traceback is the cause): the environment
variable, the credential, the file, the permission, the host, the program or module.
The suggested decision fits it: put it in place, then requeue, which re-runs the
reproduction (and closes the incident as recovered when it passes).

Pure: text in, text out. Every pattern is linear (no nested quantifiers) and reads one
line at a time.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Missing", "headline", "what_is_missing"]

_VAR = r"([A-Z][A-Z0-9_]{1,100})"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("variable", re.compile(r"KeyError: ['\"]" + _VAR + r"['\"]")),
    ("variable", re.compile(r"\$?" + _VAR + r"['\"`]? (?:is )?(?:not set|must be set|unset)")),
    ("variable", re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,100}): unbound variable")),
    (
        "variable",
        re.compile(
            r"(?i:environment variable|env var|missing variable)s?:? ['\"`$]?"
            r"([A-Za-z_][A-Za-z0-9_]{0,100})"
        ),
    ),
    ("host", re.compile(r"[Cc]ould not resolve host:? ['\"]?([A-Za-z0-9.-]{1,253})")),
    ("host", re.compile(r"[Ff]ailed to resolve ['\"]([A-Za-z0-9.-]{1,253})['\"]")),
    ("host", re.compile(r"host=['\"]([A-Za-z0-9.-]{1,253})['\"].{0,300}(?:resol|getaddrinfo)")),
    ("permission", re.compile(r"[Pp]ermission denied: ['\"]([^'\"]{1,400})['\"]")),
    ("file", re.compile(r"No such file or directory: ['\"]([^'\"]{1,400})['\"]")),
    ("module", re.compile(r"No module named ['\"]([A-Za-z0-9_.]{1,200})['\"]")),
    ("program", re.compile(r"([A-Za-z0-9_.+-]{1,100}): (?:command )?not found")),
    (
        "credential",
        re.compile(
            r"(Unable to locate credentials|DefaultCredentialsError|Bad credentials|"
            r"ExpiredToken|401 Unauthorized|[Ii]nvalid (?:API key|token|credentials))"
        ),
    ),
    ("host", re.compile(r"(Temporary failure in name resolution|Name or service not known)")),
    ("permission", re.compile(r"(Permission denied|PermissionError|403 Forbidden)")),
)

_WHAT = {
    "variable": (
        "the environment variable {0} is not set",
        "set {0} where the step runs (for its re-run: in the watcher's environment, "
        "listed in [verification] pass_env)",
    ),
    "credential": ("a credential is missing or refused ({0})", "provide a valid credential"),
    "file": ("the file {0} is missing", "create or restore {0}"),
    "permission": ("permission denied ({0})", "give the step the access it needs ({0})"),
    "host": ("a host cannot be reached ({0})", "fix the host name, DNS or network ({0})"),
    "module": ("the Python module {0} is not installed", "install {0} where the step runs"),
    "program": ("the program {0} is not installed", "install {0} where the step runs"),
}


class Missing(NamedTuple):
    kind: str  # variable, credential, file, permission, host, module, program
    name: str  # what the output names


def what_is_missing(text: str) -> Missing | None:
    """The last thing `text` names as missing (its last line that names one), if any."""
    for line in reversed(text[-65536:].splitlines()):
        line = line[:2000]
        for kind, pattern in _PATTERNS:
            found = pattern.search(line)
            if found:
                return Missing(kind, found.group(1))
    return None


def headline(message: str, log: str, failure_class: str, incident_id: str) -> str:
    """The escalation's reason for a failure a person must act on: what is missing, and
    the decision that fits (put it in place, then requeue)."""
    missing = what_is_missing(f"{message}\n{log}")
    requeue = f"then requeue: incidents resolve-escalation {incident_id} --requeue"
    if missing is None:
        return (
            f"{message} ({failure_class}: what the step needs is missing or refused; no fixer "
            f"can mend it). Suggested decision: put it in place, {requeue}"
        )
    what, do = _WHAT[missing.kind]
    return (
        f"{what.format(missing.name)} ({failure_class}: no fixer can mend it; from: "
        f"{message}). Suggested decision: {do.format(missing.name)}, {requeue}"
    )
