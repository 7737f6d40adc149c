"""What an incident records of its classification and signature (issue 16), and dedupe into
open incidents signed by older normalisation rules."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from incidents import store
from incidents.classify import classify
from incidents.layout import Root
from incidents.models import Incident
from incidents.signature import NORMALIZATION_VERSION, normalize_message, signature_key
from tests.helpers import Cli


def incident(root: Root, incident_id: str) -> dict[str, Any]:
    _, folder = root.locate(incident_id)
    loaded: dict[str, Any] = json.loads((folder / "incident.json").read_text())
    return loaded


def captured(cli: Cli, *args: str) -> str:
    r = cli("capture", *args)
    assert r.code == 0, r.err
    return r.out.strip()


def test_the_incident_records_the_rule_and_the_inputs_of_its_signature(
    cli: Cli, root: Root
) -> None:
    message = "Read timed out after 30 seconds from 10.0.0.12"
    doc = incident(root, captured(cli, "--step", "dl", "--message", message))
    verdict = classify(message)
    assert verdict.rule  # a rule decided, so the record names one
    assert doc["classified_by"] == {
        "rule": verdict.rule,
        "where": "message",
        "reason": verdict.reason,
        "error_code": doc["error_code"],
        "failure_class": doc["failure_class"],
        "given": [],
    }
    normalized = "Read timed out after <n> from <ip>"
    assert doc["signature_inputs"] == {
        "failure_class": doc["failure_class"],
        "step": "dl",
        "normalized": normalized,
        "normalization": NORMALIZATION_VERSION,
        "basis": "message",
    }
    assert doc["error_signature"] == f"{doc['failure_class']} | dl | {normalized}"
    parsed = Incident.model_validate(doc)
    assert parsed.classified_by is not None and parsed.signature_inputs is not None
    assert parsed.signature_inputs.normalization == NORMALIZATION_VERSION


def test_what_the_caller_gave_is_said_so(cli: Cli, root: Root) -> None:
    message = "Read timed out after 30 seconds"
    both = incident(
        root,
        captured(cli, "--step", "dl", "--message", message, "--failure-class", "env",
                 "--error-code", "HOOK_FAILURE"),
    )  # fmt: skip
    assert (both["failure_class"], both["error_code"]) == ("env", "HOOK_FAILURE")
    by = both["classified_by"]
    assert by["given"] == ["failure_class", "error_code"]
    # ... and what the classifier would have said is kept beside it
    assert (by["failure_class"], by["error_code"], by["where"]) == (
        "transient",
        "TIMEOUT",
        "message",
    )
    one = incident(
        root, captured(cli, "--step", "x", "--message", message, "--error-code", "UNKNOWN")
    )
    assert one["classified_by"]["given"] == ["error_code"]
    assert one["failure_class"] == one["classified_by"]["failure_class"] == "transient"


def test_a_timed_out_run_is_classified_not_given(cli: Cli, root: Root) -> None:
    r = cli("run", "--step", "slow", "--timeout", "0.3", "--",
            sys.executable, "-c", "import time; time.sleep(30)")  # fmt: skip
    assert r.code == 124, r.err
    [folder] = root.inbox.iterdir()
    by = json.loads((folder / "incident.json").read_text())["classified_by"]
    assert (by["where"], by["error_code"], by["given"]) == ("timed_out", "TIMEOUT", [])


def test_an_incident_captured_before_the_fields_existed_is_still_valid() -> None:
    old = {
        "incident_id": "incident_20260101_000000_dl_000000000000",
        "status": "new",
        "created_at": "2026-01-01T00:00:00+00:00",
        "updated_at": "2026-01-01T00:00:00+00:00",
        "run_id": "run_1",
        "year": 2026,
        "month": 1,
        "ym": "2026-01",
        "step": "dl",
        "failure_class": "transient",
        "message": "KeyError: 'user_id'",
        "error_signature": "transient | dl | KeyError: <str>",
    }
    parsed = Incident.model_validate(old)
    assert parsed.classified_by is None and parsed.signature_inputs is None


# --- open incidents signed by older rules ---------------------------------------------------


def make_v1(root: Root, incident_id: str, v1_signature: str, indexed: bool = True) -> None:
    """Turn a fresh incident into one captured before versions were recorded: the signature
    of normalisation rules 1, no signature_inputs, its index entry under the v1 key."""
    folder = root.inbox / incident_id
    doc = store.read_incident(folder)
    new_key = signature_key(doc["error_signature"])
    doc.pop("signature_inputs")
    doc.pop("classified_by")
    doc["error_signature"] = v1_signature
    store.save_incident(folder, doc)
    index = root.state / "signatures"
    (index / new_key).unlink(missing_ok=True)
    for stamp in index.glob("normalization-*"):
        stamp.unlink()
    if indexed:
        (index / signature_key(v1_signature)).write_text(incident_id + "\n")


def test_a_repeat_folds_into_an_open_incident_signed_by_older_rules(cli: Cli, root: Root) -> None:
    message = "KeyError: 'user_id' in worker 3"
    old_id = captured(cli, "--step", "etl", "--message", message, "--failure-class", "code")
    make_v1(root, old_id, "code | etl | KeyError: <str> in worker <n>")

    again = captured(cli, "--step", "etl", "--message", "KeyError: 'user_id' in worker 7",
                     "--failure-class", "code")  # fmt: skip
    assert again == old_id
    doc = incident(root, old_id)
    assert doc["occurrences"] == 2
    assert doc["error_signature"] == "code | etl | KeyError: <str> in worker <n>"  # kept
    assert (root.state / "signatures" / f"normalization-{NORMALIZATION_VERSION}").is_file()
    # what the older rules grouped with it and the current rules do not is a new incident
    other = captured(cli, "--step", "etl", "--message", "KeyError: 'order_id' in worker 3",
                     "--failure-class", "code")  # fmt: skip
    assert other != old_id


def test_an_older_incident_that_was_never_indexed_is_not_folded_into(cli: Cli, root: Root) -> None:
    message = "KeyError: 'user_id' in worker 3"
    old_id = captured(cli, "--step", "etl", "--message", message, "--no-dedupe")
    v1 = f"{incident(root, old_id)['failure_class']} | etl | KeyError: <str> in worker <n>"
    make_v1(root, old_id, v1, indexed=False)  # captured with --no-dedupe
    assert captured(cli, "--step", "etl", "--message", message) != old_id


def test_the_stored_message_signs_as_capture_signed_it(cli: Cli, root: Root) -> None:
    """The recomputed signature is made from the stored message: capture signs the message
    exactly as it stores it (redacted, stripped, cut to max_message_chars)."""
    message = "  token=sk-abcdefghijklmnopqrstuvwxyz012345 rejected at 12:00:01  "
    doc = incident(root, captured(cli, "--step", "s", "--message", message))
    assert doc["signature_inputs"]["normalized"] == normalize_message(doc["message"])
    assert (
        "sk-abcdef"
        not in Path(root.inbox).joinpath(doc["incident_id"], "incident.json").read_text()
    )
