"""Repeats of an escalated incident, captured by parallel real processes, each become one
occurrence of it, where it lies in the escalated archive: counted once each, under its
lock, with nothing moved and no new incident."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from incidents.layout import Root
from incidents.models import Incident
from tests.helpers import Cli, run_script

ARGS = ("--step", "nightly", "--message", "KeyError: 'order_total' in export")


def test_parallel_repeats_of_an_escalated_incident_are_its_occurrences(
    cli: Cli, root: Root
) -> None:
    first = run_script("error_capture.py", *ARGS).stdout.strip()
    assert cli("archive", first, "--escalated", "--reason", "a person must look").code == 0
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: run_script("error_capture.py", *ARGS), range(12)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode]
    assert {r.stdout.strip() for r in results} == {first}
    assert [p.name for p in root.inbox.iterdir() if not p.name.startswith(".")] == []
    folder = root.bucket("escalated") / first
    doc = json.loads((folder / "incident.json").read_text())
    Incident.model_validate(doc)
    assert (doc["status"], doc["occurrences"]) == ("escalated", 13)
    assert (folder / "status.txt").read_text() == "escalated\n"
    lines = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    keys = [e["key"] for e in lines if e.get("event") == "occurrence"]
    assert sorted(keys) == sorted(f"o{n}" for n in range(2, 14))


def test_a_repeat_after_a_person_resolved_it_is_a_new_incident(cli: Cli, root: Root) -> None:
    """The positive control: once it left the escalated archive as resolved, the failure
    again opens a new incident, linked to it as a recurrence (no fix was verified)."""
    first = run_script("error_capture.py", *ARGS).stdout.strip()
    assert cli("archive", first, "--resolved", "--reason", "handled by hand").code == 0
    again = run_script("error_capture.py", *ARGS).stdout.strip()
    assert again != first
    doc = json.loads((root.inbox / again / "incident.json").read_text())
    assert doc["recurrence_of"] == first and "regression_of" not in doc
