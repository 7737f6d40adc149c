"""`incidents explain ID` end to end through the CLI (issue 16)."""

from __future__ import annotations

import json

from incidents import store
from incidents.classify import classify
from incidents.layout import Root
from incidents.signature import NORMALIZATION_VERSION, signature_key
from tests.helpers import Cli

FIRST = (
    "Upload to https://uploads.example.com/v1/blobs/17 failed: job "
    "7f3c2a1b-1234-4abc-9def-0123456789ab (x-github-request-id: 4C32:E66A2:27EF37:4E976C:683F3085)"
    " timed out"
)
REPEAT = (
    "Upload to https://uploads.example.com/v1/blobs/9 failed: job "
    "00000000-0000-4000-8000-000000000000 (x-github-request-id: 8F01:1B2C3:9A8B7C:6D5E4F:6A3F9B2C)"
    " timed out"
)
NORMALIZED = "Upload to <url:uploads.example.com/v1/blobs/{n}> failed: job <uuid> (x-github-request-id: <id>) timed out"


def captured(cli: Cli, *args: str) -> str:
    r = cli("capture", *args)
    assert r.code == 0, r.err
    return r.out.strip()


def archived(cli: Cli, incident_id: str, how: str) -> None:
    r = cli("archive", incident_id, how, "--reason", "by hand")
    assert r.code == 0, r.err


def test_explain_shows_each_normalisation_the_signature_the_rule_and_the_group(
    cli: Cli, root: Root
) -> None:
    fixed = captured(cli, "--step", "upload", "--message", FIRST)
    archived(cli, fixed, "--resolved")
    gave_up = captured(cli, "--step", "upload", "--message", REPEAT)
    archived(cli, gave_up, "--escalated")
    # (without --no-dedupe it would be one more occurrence of the escalated one)
    current = captured(
        cli, "--step", "upload", "--message", FIRST.replace("17", "18"), "--no-dedupe"
    )
    other = captured(cli, "--step", "upload", "--message", FIRST.replace("failed", "refused"))

    r = cli("explain", current)
    assert r.code == 0 and r.err == ""
    verdict = classify(FIRST)
    signature = f"{verdict.failure_class.value} | upload | {NORMALIZED}"
    lines = r.out.splitlines()
    assert lines[:9] == [
        f"incident:      {current} (inbox, new)",
        f"message:       {FIRST.replace('17', '18')}",
        f"normalization (rules {NORMALIZATION_VERSION}), in order:",
        "  url: https://uploads.example.com/v1/blobs/18 -> <url:uploads.example.com/v1/blobs/{n}>",
        "  uuid: 7f3c2a1b-1234-4abc-9def-0123456789ab -> <uuid>",
        "  keyed_id: x-github-request-id: 4C32:E66A2:27EF37:4E976C:683F3085"
        " -> x-github-request-id: <id>",
        f"normalized:    {NORMALIZED}",
        f"signature:     {signature}",
        f"key:           {signature_key(signature)}",
    ]
    assert lines[9] == (
        f"classified:    {verdict.failure_class.value} / {verdict.error_code.value} "
        f"by rule {verdict.rule!r} in the message"
    )
    assert lines[10].strip() == verdict.reason
    # on its own (--no-dedupe): no regression, no recurrence
    assert lines[11] == "same group:    2 other incident(s)"
    table = [line.split() for line in lines[12:]]
    assert table[0] == ["ID", "WHERE", "STATUS", "SEEN", "CREATED"]
    # oldest first; captured in one second they are in id order
    assert sorted(row[:3] for row in table[1:]) == sorted(
        [[fixed, "resolved", "resolved"], [gave_up, "escalated", "escalated"]]
    )
    assert other not in r.out
    # the same failure after a close by hand: a recurrence of it, not a regression
    shown = cli("explain", gave_up).out
    assert f"recurrence:    of {fixed} (closed: closed by hand; no fix was verified" in shown
    assert "regression:" not in shown

    doc = cli("explain", current, "--json").json()
    assert doc["normalization"]["steps"][0] == {
        "rule": "url",
        "before": "https://uploads.example.com/v1/blobs/18",
        "after": "<url:uploads.example.com/v1/blobs/{n}>",
    }
    assert doc["signature"]["signature"] == doc["signature"]["current"] == signature
    assert doc["signature"]["inputs"]["normalized"] == NORMALIZED
    assert doc["signature"]["drift"] is False
    assert doc["classified_by"]["rule"] == verdict.rule
    assert doc["classified_by"]["source"] == "incident.json"
    assert doc["group"]["signatures"] == [signature]
    assert sorted(o["incident_id"] for o in doc["group"]["others"]) == sorted([fixed, gave_up])


def test_explain_says_when_the_caller_gave_the_class(cli: Cli) -> None:
    incident_id = captured(
        cli, "--step", "s", "--message", "Read timed out", "--failure-class", "env"
    )
    lines = cli("explain", incident_id).out.splitlines()
    [line] = [i for i, text in enumerate(lines) if text.startswith("classified:")]
    assert lines[line] == "classified:    env / TIMEOUT: --failure-class given by the caller"
    assert lines[line + 1].startswith("               (the classifier said transient / TIMEOUT: ")
    out = cli("explain", incident_id).out
    assert "normalization: nothing volatile" in out and "same group:    no other incident" in out


def test_an_unknown_id_is_one_line(cli: Cli) -> None:
    captured(cli, "--step", "s", "--message", "m")
    r = cli("explain", "incident_20260101_000000_s_000000000000")
    assert (r.code, r.out) == (1, "")
    assert r.err.count("\n") == 1 and "no incident" in r.err
    r = cli("explain", "../escape")
    assert r.code == 2 and r.err.count("\n") == 1 and r.out == ""


def test_an_incident_signed_by_older_rules(cli: Cli, root: Root) -> None:
    """Captured before issue 16: a v1 signature, no classified_by in incident.json (the
    sentence in context.json), no signature_inputs. Explain shows its signature by today's
    rules, and its group holds the incidents of either signature."""
    message = "Cannot find module 'express' at 2026-01-01T00:00:00Z"
    old = captured(cli, "--step", "build", "--message", message, "--failure-class", "env")
    folder = root.inbox / old
    doc = store.read_incident(folder)
    today = doc["error_signature"]
    doc.pop("classified_by"), doc.pop("signature_inputs")
    doc["error_signature"] = "env | build | Cannot find module <str> at <ts>"
    store.save_incident(folder, doc)
    context = json.loads((folder / "context.json").read_text())
    context["classified_by"] = "no rule matched"
    (folder / "context.json").write_text(json.dumps(context))
    new = captured(cli, "--step", "build", "--message", message, "--failure-class", "env",
                   "--no-dedupe")  # fmt: skip

    r = cli("explain", old)
    assert r.code == 0, r.err
    assert "signature:     env | build | Cannot find module <str> at <ts>" in r.out
    assert (
        f"made by normalization rules 1; by the current rules ({NORMALIZATION_VERSION}) it is:"
        in r.out
    )
    assert f"{today} (key {signature_key(today)})" in r.out
    assert "classified:    env / UNKNOWN: no rule matched (context.json, an older capture)" in r.out
    found = cli("explain", old, "--json").json()
    assert found["signature"]["normalization"] == 1 and found["signature"]["current"] == today
    assert [o["incident_id"] for o in found["group"]["others"]] == [new]


def test_explain_shows_an_error_code_kept_and_the_names_of_a_url(cli: Cli) -> None:
    message = "npm ERR! 404 Not Found - GET https://registry.npmjs.org/left-pad (exit status 1)"
    incident_id = captured(cli, "--step", "install", "--message", message)
    lines = cli("explain", incident_id).out.splitlines()
    assert lines[2:6] == [
        f"normalization (rules {NORMALIZATION_VERSION}), in order:",
        "  code: 404 kept (it names the failure)",
        "  url: https://registry.npmjs.org/left-pad -> <url:registry.npmjs.org/left-pad>",
        "  code: exit status 1 kept (it names the failure)",
    ]
    assert lines[6] == (
        "normalized:    npm ERR! 404 Not Found - GET <url:registry.npmjs.org/left-pad> "
        "(exit status 1)"
    )
