"""The environment a user's command ran with, as `incidents run` records it (stdlib only).

The verdict runs the reproduction a second time exactly as the user ran it: the same
argv, cwd and environment. So `run` keeps every variable's name, and its value unless
the name says it is a secret (or the value is too long to be a setting): a secret is
kept by name only, and the second run takes its value from the environment of the
process that judges (`checks.as_user`), never from the bundle. The record goes through the
bundle's redaction like the rest of `context.json`.
"""

from __future__ import annotations

import os
import re

MAX_VALUE_CHARS = 4096
MAX_TOTAL_CHARS = 256 << 10
# the words that make a name a secret's (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, PGPASSWORD)
_SECRET_NAME = re.compile(
    r"SECRET|TOKEN|PASS(?:WORD|WD|PHRASE)?(?:$|_)|(?:^|_)PW(?:$|_)|API_?KEY|PRIVATE|"
    r"CREDENTIAL|AUTH|COOKIE|SESSION|(?:^|_)KEY(?:$|_)|SIGNATURE|DSN|CONN(?:ECTION)?_?STR",
    re.I,
)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def user_env(environ: dict[str, str] | None = None) -> dict[str, str | None]:
    """{name: value, or None for a secret or an oversized value} of the environment."""
    env = dict(os.environ if environ is None else environ)
    out: dict[str, str | None] = {}
    total = 0
    for name in sorted(env):
        value: str | None = env[name]
        if is_secret_name(name) or len(env[name]) > MAX_VALUE_CHARS:
            value = None
        total += len(name) + len(value or "")
        if total > MAX_TOTAL_CHARS:
            break
        out[name] = value
    return out
