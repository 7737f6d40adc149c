"""`incidents capture`'s command line without argparse, for the lines scripts send.

Importing argparse and building capture's parser costs ~5 ms (argparse pulls in gettext,
locale and shutil), a quarter of the stdlib floor of a capture (bench/capture.py). So
`parse` reads the plain, well-formed lines failing scripts send: exact long option names,
`--name value` or `--name=value`, values that do not start with `-`. Anything else
(`--help`, an abbreviation, a missing or unknown option, a bad choice or number, a value
that looks like an option) returns None and argparse (`capture.build_parser`) parses the
line, so its errors and help stay argparse's own. tests/test_capture_argv.py checks that
both agree on every line this accepts.
"""

from __future__ import annotations

from types import SimpleNamespace

__all__ = ["parse"]

# option -> its attribute, as argparse names them (capture.build_parser)
_VALUES = {
    "--step": "step",
    "--message": "message",
    "--run-id": "run_id",
    "--failure-class": "failure_class",
    "--error-code": "error_code",
    "--exit-code": "exit_code",
    "--log-file": "log_file",
    "--audit-file": "audit_file",
    "--context-json": "context_json",
    "--workdir": "workdir",
    "--root": "root",
    "--config": "config",
}
_APPENDS = {
    "--python-file": "python_file",
    "--powershell-file": "powershell_file",
    "--verify": "verify",
}
_FLAGS = {"--no-dedupe": "no_dedupe", "--json": "json", "--ok": "ok"}
_REQUIRED = ("step", "message")


# `--failure-class` and `--error-code`: the values of incidents.codes' StrEnums, spelt out
# here so that a plain line creates no enum (tests/test_capture_argv.py keeps them equal)
CHOICES = {
    "failure_class": frozenset({"transient", "code", "env", "never_retry", "unknown"}),
    "error_code": frozenset(
        {"TIMEOUT", "RATE_LIMIT", "SYNTAX", "TEST_FAILURE", "LINT_FAILURE", "TASK_FAILED",
         "HOOK_FAILURE", "UNKNOWN"}
    ),
}  # fmt: skip


def parse(argv: list[str]) -> SimpleNamespace | None:
    """The options of `incidents capture ARGV`, or None: argparse must read this line."""
    found: dict[str, object] = dict.fromkeys(_VALUES.values())
    found.update({dest: False for dest in _FLAGS.values()})
    appended: dict[str, list[str]] = {dest: [] for dest in _APPENDS.values()}
    i = 0
    while i < len(argv):
        name, eq, value = argv[i].partition("=")
        i += 1
        if name in _FLAGS and not eq:
            found[_FLAGS[name]] = True
            continue
        dest = _VALUES.get(name) or _APPENDS.get(name)
        if dest is None:
            return None
        if not eq:
            if i == len(argv) or argv[i].startswith("-"):
                return None  # argparse decides: a negative number, a missing value...
            value = argv[i]
            i += 1
        if dest in appended:
            appended[dest].append(value)
        elif dest == "exit_code":
            try:
                found[dest] = int(value)
            except ValueError:
                return None
        else:
            found[dest] = value
    if any(found[dest] is None for dest in _REQUIRED if not (dest == "message" and found["ok"])):
        return None
    for dest, allowed in CHOICES.items():
        if found[dest] is not None and found[dest] not in allowed:
            return None
    return SimpleNamespace(**found, **appended)
