"""`incidents plan ID [--from FILE]`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from incidents import fsutil, store
from incidents.layout import Root
from tests.helpers import FIXTURES, Cli, events, tree


def inbox_bundle(incident_id: str = "incident_20260217_120000_download_0a1b2c") -> str:
    """An inbox bundle in seed 004's shape, written through the bundle store (no capture)."""
    root = Root(Path(os.environ["INCIDENTS_ROOT"])).ensure()
    doc = {
        "incident_id": incident_id, "status": "new",
        "created_at": "2026-02-17T03:00:00+00:00", "updated_at": "2026-02-17T03:00:00+00:00",
        "run_id": "run_20260217_115959_123456", "year": 2026, "month": 2, "ym": "2026-02",
        "step": "download", "failure_class": "transient", "message": "timeout",
        "error_signature": "transient | download | timeout",
    }  # fmt: skip
    store.write_bundle(root, incident_id, {
        "incident.json": fsutil.dump_json(doc), "status.txt": b"new\n", "log_tail.txt": b"",
        "audit_tail.jsonl": b"", "context.json": b"{}\n",
    })  # fmt: skip
    return incident_id


def plan_file(tmp_path: Path, name: str, incident_id: str) -> str:
    path = tmp_path / f"supplied_{name}"
    path.write_text((FIXTURES / "plans" / name).read_text().replace("INCIDENT_ID", incident_id))
    return str(path)


def status_of(root: Root, incident_id: str) -> str:
    return str(store.read_incident(root.inbox / incident_id)["status"])


def test_supply_a_plan_moves_new_to_planned(cli: Cli, root: Root, tmp_path: Path) -> None:
    a = inbox_bundle()
    r = cli("plan", a, "--from", plan_file(tmp_path, "valid.json", a))
    assert r.code == 0, r.err
    assert r.out == f"{a}: plan written to error_plans/{a}/plan.json (status planned)\n"
    assert status_of(root, a) == "planned"
    assert (root.inbox / a / "status.txt").read_text() == "planned\n"
    doc = json.loads((root.plan_dir(a) / "plan.json").read_text())
    assert doc["summary"] == "Selector changed in provider page"
    assert "### A1: Adjust selector" in (root.plan_dir(a) / "plan.md").read_text()
    shown = cli("plan", a)
    assert shown.code == 0 and shown.out.startswith(f"# Plan for {a}\n")
    assert cli("plan", a, "--json").json() == doc


def test_replacing_keeps_a_running_status(cli: Cli, root: Root, tmp_path: Path) -> None:
    a = inbox_bundle()
    folder = root.inbox / a
    store.set_status(folder, store.read_incident(folder), "running")
    r = cli("plan", a, "--from", plan_file(tmp_path, "valid.json", a), "--json")
    assert r.code == 0, r.err
    assert r.json() == {"incident_id": a, "plan": f"error_plans/{a}/plan.json", "status": "running"}
    assert status_of(root, a) == "running"


def test_invalid_plan_is_refused_and_the_old_one_kept(cli: Cli, root: Root, tmp_path: Path) -> None:
    a = inbox_bundle()
    assert cli("plan", a, "--from", plan_file(tmp_path, "valid.json", a)).code == 0
    before = tree(root.plan_dir(a)), tree(root.inbox / a)
    bad = plan_file(tmp_path, "bad_priority.json", a)
    r = cli("plan", a, "--from", bad)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith(f"incidents: {bad}: actions.0.priority: Input should be 'P0'")
    r = cli("plan", a, "--from", plan_file(tmp_path, "valid.json", "someone_else"))
    assert r.code == 2 and "incident_id: is for incident 'someone_else'" in r.err
    assert (tree(root.plan_dir(a)), tree(root.inbox / a)) == before


def test_invalid_plan_leaves_a_new_incident_new(cli: Cli, root: Root, tmp_path: Path) -> None:
    a = inbox_bundle()
    r = cli("plan", a, "--from", plan_file(tmp_path, "missing_fields.json", a))
    assert r.code == 2 and ": summary: Field required" in r.err
    assert status_of(root, a) == "new"
    assert not root.plan_dir(a).exists()


def test_unknown_closed_and_planless_incidents(cli: Cli, root: Root, tmp_path: Path) -> None:
    r = cli("plan", "incident_nope", "--from", plan_file(tmp_path, "valid.json", "incident_nope"))
    assert r.code == 1 and "no incident 'incident_nope'" in r.err
    r = cli("plan", "incident_nope")
    assert r.code == 1 and "no incident 'incident_nope'" in r.err
    a = inbox_bundle()
    r = cli("plan", a)
    assert r.code == 1 and r.err == f"incidents: incident {a} has no plan yet\n"
    r = cli("plan", a, "--from", str(tmp_path / "missing.json"))
    assert r.code == 2 and r.err.endswith("missing.json: no such file\n")
    assert cli("archive", a, "--escalated", "--reason", "by hand").code == 0
    r = cli("plan", a, "--from", plan_file(tmp_path, "valid.json", a))
    assert r.code == 1 and "is closed (error_archive/escalated)" in r.err
    assert cli("plan", "../x").code == 2


def test_supplied_plan_is_logged_in_the_mirror(cli: Cli, root: Root, tmp_path: Path) -> None:
    a = inbox_bundle()
    assert cli("plan", a, "--from", plan_file(tmp_path, "valid.json", a)).code == 0
    assert "plan_supplied" in events(root, a)


def test_help_exists(cli: Cli) -> None:
    r = cli("plan", "--help")
    text = " ".join(r.out.split())
    assert r.code == 0 and "--from" in text and "the old plan stays" in text
