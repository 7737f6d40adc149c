"""What a failure a person must act on names as missing (incidents.needs), read from
outputs as real programs print them, and the headline and decision that follow."""

from __future__ import annotations

import pytest

from incidents.needs import Missing, headline, what_is_missing

TRACEBACK = """Traceback (most recent call last):
  File "/srv/jobs/push.py", line 3, in <module>
    token = os.environ["WAREHOUSE_API_TOKEN"]
            ~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^
  File "<frozen os>", line 679, in __getitem__
KeyError: 'WAREHOUSE_API_TOKEN'
"""


@pytest.mark.parametrize(
    ("output", "missing"),
    [
        (TRACEBACK, Missing("variable", "WAREHOUSE_API_TOKEN")),
        ("error: DATABASE_URL is not set", Missing("variable", "DATABASE_URL")),
        ("Environment variable 'STRIPE_KEY' must be set", Missing("variable", "STRIPE_KEY")),
        ("deploy.sh: line 4: S3_BUCKET: unbound variable", Missing("variable", "S3_BUCKET")),
        ("curl: (6) Could not resolve host: api.example.com", Missing("host", "api.example.com")),
        (
            "PermissionError: [Errno 13] Permission denied: '/var/spool/out.csv'",
            Missing("permission", "/var/spool/out.csv"),
        ),
        (
            "FileNotFoundError: [Errno 2] No such file or directory: '/etc/acme/creds.json'",
            Missing("file", "/etc/acme/creds.json"),
        ),
        ("ModuleNotFoundError: No module named 'boto3'", Missing("module", "boto3")),
        ("run.sh: line 2: jq: command not found", Missing("program", "jq")),
        (
            "botocore.exceptions.NoCredentialsError: Unable to locate credentials",
            Missing("credential", "Unable to locate credentials"),
        ),
    ],
)
def test_what_the_output_names_as_missing(output: str, missing: Missing) -> None:
    assert what_is_missing(output) == missing


def test_the_last_line_that_names_something_wins() -> None:
    """A traceback's cause is at its end: an earlier line naming a file is context."""
    text = "reading '/etc/app.conf'\nNo such file or directory: '/tmp/old'\n" + TRACEBACK
    assert what_is_missing(text) == Missing("variable", "WAREHOUSE_API_TOKEN")


def test_nothing_named_is_none_and_the_headline_keeps_the_message() -> None:
    assert what_is_missing("exit status 1\nsomething went wrong") is None
    said = headline("sync failed: exit 1", "", "env", "incident_x")
    assert said.startswith("sync failed: exit 1 (env: ")
    assert "then requeue: incidents resolve-escalation incident_x --requeue" in said


def test_the_headline_says_what_is_missing_and_what_to_do() -> None:
    said = headline("python push.py: exited with 1", TRACEBACK, "env", "incident_x")
    assert said.startswith("the environment variable WAREHOUSE_API_TOKEN is not set (env")
    assert "Suggested decision: set WAREHOUSE_API_TOKEN where the step runs" in said
    assert "[verification] pass_env" in said and said.endswith("--requeue")
