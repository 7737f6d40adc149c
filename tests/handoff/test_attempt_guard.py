"""Who may record an attempt, and under which name: while an agent holds the claim only it
records `attempt_XX.json`; the document's error_signature is the incident's; an agent's
name is one line of printable characters in claim, submit and attempt alike. A refusal is
one line, with the hierarchy's exit code, and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents import handoff
from incidents.errors import UsageError
from incidents.layout import Root
from tests.handoff.test_handoff import attempt_doc
from tests.helpers import Cli, events, tree


def _signature(cli: Cli, incident_id: str) -> str:
    return str(cli("status", incident_id, "--json").json()["incident"]["error_signature"])


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_only_the_holder_of_a_claim_records_an_attempt(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    assert cli("claim", waiting, "--agent", "holder", "--lease", "30m").code == 0
    doc = tmp_path / "attempt.json"
    doc.write_text(json.dumps(attempt_doc(waiting, error_signature=_signature(cli, waiting))))
    before = (tree(root.runs_dir(waiting)), tree(root.inbox / waiting))

    r = cli("attempt", waiting, "--file", str(doc), "--agent", "intruder")
    assert r.code == 1, r.out + r.err
    assert "claimed by holder, not intruder" in _one_line(r.err)
    r = cli("attempt", waiting, "--file", str(doc))  # no name: not the holder either
    assert r.code == 1 and "claimed by holder" in _one_line(r.err) and "--agent" in r.err
    assert (tree(root.runs_dir(waiting)), tree(root.inbox / waiting)) == before

    r = cli("attempt", waiting, "--file", str(doc), "--agent", "holder")
    assert r.code == 0 and "attempt_01.json" in r.out, r.err
    assert "attempt_recorded" in events(root, waiting)
    # the holder's iteration was kept: its submit still works
    assert cli("submit", waiting, "--agent", "holder", "--notes", "x").code == 0


def test_an_attempt_carries_the_incidents_signature(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    doc = tmp_path / "attempt.json"
    doc.write_text(json.dumps(attempt_doc(waiting, error_signature="someone else's")))
    before = (tree(root.runs_dir(waiting)), tree(root.inbox / waiting))
    r = cli("attempt", waiting, "--file", str(doc))
    assert r.code == 2, r.out + r.err
    line = _one_line(r.err)
    assert "error_signature" in line and "is not the incident's signature" in line
    assert (tree(root.runs_dir(waiting)), tree(root.inbox / waiting)) == before
    doc.write_text(json.dumps(attempt_doc(waiting)))  # omitted: filled in
    assert cli("attempt", waiting, "--file", str(doc)).code == 0
    stored = json.loads((root.runs_dir(waiting) / "attempt_01.json").read_text())
    assert stored["error_signature"] == _signature(cli, waiting)


@pytest.mark.parametrize(
    "name", ["a\nb", "a\rb", "tab\there", "bell\x07", "rtl\u202eevil", "ls\u2028x"]
)
def test_an_agents_name_is_one_printable_line(
    cli: Cli, root: Root, tmp_path: Path, waiting: str, name: str
) -> None:
    before = (tree(root.runs_dir(waiting)), tree(root.inbox / waiting))
    r = cli("claim", waiting, "--agent", name)
    assert r.code == 2 and "one line of printable characters" in _one_line(r.err), r.err
    assert (tree(root.runs_dir(waiting)), tree(root.inbox / waiting)) == before
    assert cli("next", "--json").json()["incident_id"] == waiting  # not claimed
    doc = tmp_path / "attempt.json"
    doc.write_text(json.dumps(attempt_doc(waiting)))
    r = cli("attempt", waiting, "--file", str(doc), "--agent", name)
    assert r.code == 2 and "one line of printable characters" in _one_line(r.err), r.err
    assert cli("claim", waiting, "--agent", "ok").code == 0
    r = cli("submit", waiting, "--agent", name)
    assert r.code == 2 and "one line of printable characters" in _one_line(r.err), r.err
    assert not list(root.runs_dir(waiting).glob("attempt_*.json"))
    with pytest.raises(UsageError):
        handoff.validate_agent(name)


def test_an_empty_or_overlong_agent_name_is_refused(cli: Cli, waiting: str) -> None:
    r = cli("claim", waiting, "--agent", " ")
    assert r.code == 2 and "--agent is required" in _one_line(r.err)
    r = cli("claim", waiting, "--agent", "x" * 101)
    assert r.code == 2 and "at most 100 characters" in _one_line(r.err)
