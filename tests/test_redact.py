"""Secret redaction: corpus recall and false positives, unit cases, JSON, speed, import cost."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from incidents.redact import REDACTED, is_secret_key, redact, redact_json

SECRETS = Path(__file__).parent / "fixtures" / "secrets"


def load_cases(path: Path) -> list[str]:
    """One case per line; `>>>` ... `<<<` holds a multi-line case; `#` lines are comments."""
    cases: list[str] = []
    block: list[str] | None = None
    for line in path.read_text(encoding="utf-8").split("\n"):
        if block is not None:
            if line == "<<<":
                cases.append("\n".join(block))
                block = None
            else:
                block.append(line)
        elif line == ">>>":
            block = []
        elif line.strip() and not line.startswith("#"):
            cases.append(line)
    assert block is None, f"unterminated block in {path.name}"
    return cases


POSITIVES = load_cases(SECRETS / "positives.txt")
NEGATIVES = load_cases(SECRETS / "negatives.txt")
MARKED = re.compile(r"«(.*?)»", re.DOTALL)


def test_corpus_is_substantial_and_well_formed() -> None:
    assert len(POSITIVES) >= 70
    assert len(NEGATIVES) >= 60
    for case in POSITIVES:
        secrets = MARKED.findall(case)
        assert secrets and all(secrets), case
        assert "«" not in MARKED.sub("", case) and "»" not in MARKED.sub("", case), case


def test_corpus_recall_is_total() -> None:
    """Every marked secret is replaced, and nothing else in the case changes."""
    missed = []
    for case in POSITIVES:
        text = case.replace("«", "").replace("»", "")
        expected = MARKED.sub(REDACTED, case)
        if redact(text) != expected:
            missed.append((text, redact(text)))
    assert missed == [], f"{len(missed)}/{len(POSITIVES)} positives not redacted exactly"


def test_corpus_has_no_false_positives() -> None:
    changed = [(case, redact(case)) for case in NEGATIVES if redact(case) != case]
    assert changed == [], f"{len(changed)}/{len(NEGATIVES)} negatives changed"


@pytest.mark.parametrize("lead", [c for c in POSITIVES if c.startswith("«")])
def test_secrets_do_not_survive_anywhere_in_a_joined_log(lead: str) -> None:
    """All cases in one log: each secret gone, each negative kept.

    A PEM block whose BEGIN was cut off can only start a log (a tail cut), so each such case
    leads one log. Negatives come next: the last positive is a PEM block cut off by the end
    of the log, which is redacted to the end of the text.
    """
    cases = [lead] + [c for c in POSITIVES if not c.startswith("«")]
    log = lead.replace("«", "").replace("»", "") + "\n" + "\n".join(NEGATIVES) + "\n"
    log += "\n".join(c.replace("«", "").replace("»", "") for c in cases[1:])
    out = redact(log)
    for case in cases:
        for secret in MARKED.findall(case):
            for line in filter(None, secret.strip().splitlines()):
                assert line not in out
    for case in NEGATIVES:
        assert case in out


@pytest.mark.parametrize("case", POSITIVES[:20] + NEGATIVES[:20])
def test_redaction_is_idempotent(case: str) -> None:
    once = redact(case.replace("«", "").replace("»", ""))
    assert redact(once) == once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2", "password=[REDACTED]"),
        ("password: hunter2", "password: [REDACTED]"),
        ("PASSWORD = hunter2", "PASSWORD = [REDACTED]"),
        ('"password": "hunter 2"', '"password": "[REDACTED]"'),
        ("'token': 'abc'", "'token': '[REDACTED]'"),
        ("export TOKEN=abc123", "export TOKEN=[REDACTED]"),
        ("?a=1&access_token=abc&b=2", "?a=1&access_token=[REDACTED]&b=2"),
        ("client_secret=abc;next=1", "client_secret=[REDACTED];next=1"),
        ("--password hunter2", "--password [REDACTED]"),
        ("--password=hunter2", "--password=[REDACTED]"),
        ("https://bob:pw@host/x", "https://bob:[REDACTED]@host/x"),
        ("Authorization: Basic Ym9iOnB3", "Authorization: Basic [REDACTED]"),
        ("Authorization: abc.def", "Authorization: [REDACTED]"),
        ("MYSQL_PWD=/not/a/dir", "MYSQL_PWD=[REDACTED]"),
        ("DB_PASSWORD=a&b", "DB_PASSWORD=[REDACTED]"),
        ("token=abc\nnext line", "token=[REDACTED]\nnext line"),
    ],
)
def test_pairs_keep_their_key(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "password:",
        "password: \nnext: line",
        "passwords=12",
        "max_tokens=4096",
        "token_type=bearer",
        "PWD=/home/x",
        "OLDPWD=~/src",
        "token = token",
        "client(api_key=api_key)",
        "token = get_token()",
        "password = os.environ['DB_PASSWORD']",
        "password = None",
        "a password: [hidden]",
        "Authorization: [REDACTED]",
    ],
)
def test_pairs_that_are_not_secrets(text: str) -> None:
    assert redact(text) == text


def test_password_without_value_does_not_eat_the_next_line() -> None:
    assert redact("password:\nuser=bob") == "password:\nuser=bob"


def test_pem_block_is_redacted_whole_and_the_rest_kept() -> None:
    text = (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nAAAA\nBBBB\n-----END RSA PRIVATE KEY-----\nafter"
    )
    assert redact(text) == (
        "before\n-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----\nafter"
    )


def test_truncated_pem_is_redacted_to_the_end() -> None:
    out = redact("x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n")
    assert out == "x\n-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]"


def test_pem_block_cut_before_its_begin_is_redacted_from_the_start() -> None:
    """A log tail cut inside a key: body lines, then the END line, then the rest."""
    text = "b3BlbnNzaC1rZXktdjEAAAA\nAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----\nafter\n"
    out = redact(text)
    assert out == "[REDACTED]-----END OPENSSH PRIVATE KEY-----\nafter\n"
    assert redact(out) == out


def test_only_an_end_with_no_begin_before_it_reaches_back_to_the_start() -> None:
    block = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----"
    cut = "BBBB\n-----END RSA PRIVATE KEY-----"
    assert redact(f"{cut}\nkept\n{block}") == (
        "[REDACTED]-----END RSA PRIVATE KEY-----\nkept\n"
        "-----BEGIN EC PRIVATE KEY-----[REDACTED]-----END EC PRIVATE KEY-----"
    )
    # With a whole block first, a later stray END line is not a cut block: text is kept.
    assert redact(f"kept\n{block}\nalso kept\n-----END RSA PRIVATE KEY-----") == (
        "kept\n-----BEGIN EC PRIVATE KEY-----[REDACTED]-----END EC PRIVATE KEY-----"
        "\nalso kept\n-----END RSA PRIVATE KEY-----"
    )


def test_public_blocks_cut_before_their_begin_are_kept() -> None:
    for label in ("CERTIFICATE", "PUBLIC KEY", "RSA PUBLIC KEY"):
        text = f"MIIBszCCAVmgAwIBAgIUcVtqXkq1\n-----END {label}-----\nafter"
        assert redact(text) == text


def test_two_pem_blocks_are_both_redacted_and_text_between_kept() -> None:
    block = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----"
    out = redact(f"{block}\nmiddle\n{block}")
    assert out.count(REDACTED) == 2
    assert "\nmiddle\n" in out and "AAAA" not in out


AWS_SECRET = "Qm7vT2kXr9LpZa4Wn8YcH1dFs6GjB3uE0tNq5RwV"
AZURE_KEY = (
    "jzgmVxwee+7xyvc7iPiLdiU6b5L3qFhejZVoeKDE3LWmVuq5Ych7oVkGyQ6roZZhp/QjkPffAsNbXVNEz33O2A=="
)


def test_the_word_secret_counts_on_the_whole_line_up_to_a_bound() -> None:
    for gap, redacted in ((300, True), (390, True), (420, False)):
        text = "the secret " + "x" * gap + " " + AWS_SECRET
        assert (AWS_SECRET not in redact(text)) is redacted, gap
    # On the line above, however near, the word does not name the value.
    assert redact("the secret\n" + AWS_SECRET) == "the secret\n" + AWS_SECRET


def _block(*entries: str) -> str:
    return "\n".join(f'    "{entry}",' for entry in entries) + f'\n    "value": "{AZURE_KEY}"'


def test_a_key_named_in_the_block_above_its_value_is_redacted_within_three_entries() -> None:
    near = _block('keyName": "key1', 'permissions": "FULL', 'creationTime": "2026"')
    assert redact(near) == near.replace(AZURE_KEY, REDACTED)
    far = _block('keyName": "key1', 'a": "1', 'b": "2', 'c": "3')
    assert redact(far) == far
    # A line that is not an entry (prose, a closing brace) ends the block.
    broken = 'the key is below\n  },\n  {\n    "value": "' + AZURE_KEY + '"'
    assert redact(broken) == broken
    # And only a value that is an entry itself looks above.
    assert redact('"keyName": "key1",\nblob ' + AZURE_KEY).endswith(AZURE_KEY)


def test_non_ascii_text_around_secrets_is_kept() -> None:
    # 'İ' lowercases to two characters; spans must still land on the right characters.
    text = "İstanbul ✓ password=şifre123 token: x ünïcode"
    assert redact(text) == "İstanbul ✓ password=[REDACTED] token: [REDACTED] ünïcode"


def test_empty_and_clean_text_are_returned_unchanged() -> None:
    assert redact("") == ""
    clean = "INFO step amazon_download finished in 3.2s\n" * 10
    assert redact(clean) is clean


def test_is_secret_key() -> None:
    for key in (
        "password",
        "DB_PASSWORD",
        "api_token",
        "X-Api-Key",
        "apikey",
        "client_secret",
        "AccountKey",
        "auth",
        "_auth",
        "Authorization",
        "Cookie",
        "credentials",
        "pwd",
    ):
        assert is_secret_key(key), key
    for key in (
        "max_tokens",
        "token_type",
        "tokens",
        "keyboard",
        "author",
        "passed",
        "key",
        "secret_name",
        "user",
        "oauth_provider",
    ):
        assert not is_secret_key(key), key


def test_redact_json_replaces_secret_keys_wholesale_and_recurses() -> None:
    doc = {
        "user": "bob",
        "password": "x",
        "api_token": 12345,
        "Authorization": "Basic Ym9iOnB3",
        "credentials": {"user": "svc", "key": "abc"},
        "max_tokens": 4096,
        "token": None,
        "secret": "",
        "client_secret": True,
        "nested": [{"note": "password=abc and ghp_" + "a" * 36}, ("AKIA" + "B" * 16, 3)],
        "count": 3,
    }
    out = redact_json(doc)
    assert out == {
        "user": "bob",
        "password": REDACTED,
        "api_token": REDACTED,
        "Authorization": REDACTED,
        "credentials": REDACTED,
        "max_tokens": 4096,
        "token": None,
        "secret": "",
        "client_secret": True,
        "nested": [{"note": "password=[REDACTED] and [REDACTED]"}, (REDACTED, 3)],
        "count": 3,
    }
    assert doc["password"] == "x", "the input is not modified"


def test_redact_json_keeps_json_serialisable_values() -> None:
    doc = json.loads('{"a": [1, 2.5, true, null, "token=abc"], "b": {"c": "ok"}}')
    out = redact_json(doc)
    assert json.loads(json.dumps(out)) == {
        "a": [1, 2.5, True, None, "token=[REDACTED]"],
        "b": {"c": "ok"},
    }


def test_redact_json_redacts_secrets_inside_keys() -> None:
    key = "https://bob:pw@host"
    assert redact_json({key: 1}) == {"https://bob:[REDACTED]@host": 1}


def _log_64k() -> str:
    lines = [
        "2024-05-01T12:00:00Z INFO step amazon_download started pid=4242",
        '  File "/work/app/download.py", line 42, in fetch',
        "    token = session.get_token()",
        "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 sha256=9f86d081884c7d659a2f",
        "password=hunter2 user=bob max_tokens=4096 key=value",
        "export GITHUB_TOKEN=ghp_R4nd0mF4k3T0k3nV4lu3F0rT3st1ng00001",
        "Authorization: Bearer abcdefghijklmnopqrstuv",
        "git clone https://alice:s3cr3t@github.com/org/repo.git",
        "FAILED tests/test_x.py::test_y - AssertionError: assert 1 == 2",
    ]
    text = "\n".join(lines) + "\n"
    return (text * (65536 // len(text) + 1))[:65536]


def test_64k_of_secret_dense_log_is_redacted_throughout() -> None:
    """Every repetition is scrubbed, not just the first; the cost is in bench/capture.py."""
    log = _log_64k()
    out = redact(log)
    assert "hunter2" not in out and "s3cr3t" not in out and "ghp_R4" not in out
    assert out.count("password=[REDACTED]") == log.count("password=hunter2") > 100
    assert out.count("3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39") == log.count("commit 3f2a")


def test_import_is_light() -> None:
    """The capture path imports this: no typing, json, hashlib or third-party modules."""
    code = "import sys, incidents.redact; print(' '.join(sorted(sys.modules)))"
    mods = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert "incidents.redact" in mods
    assert not mods & {"typing", "json", "hashlib", "dataclasses", "pydantic", "pathlib"}


def test_a_secret_keys_value_that_states_its_state_is_kept_in_json() -> None:
    """The diagnosis of a missing credential survives every sink: a value saying what state
    the secret is in is prose, not the secret; a credential-shaped value beside it is not."""
    doc = {"DB_PASSWORD": "missing", "api_token": "<unset>", "secret": "Not Set.", "k": 1}
    assert redact_json(doc) == doc
    assert redact_json({"password": "missing1", "token": "Zk3pQ"}) == {
        "password": REDACTED,
        "token": REDACTED,
    }
