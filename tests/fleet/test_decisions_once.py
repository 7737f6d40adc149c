"""A decision routed to a host is applied once, however many passes of that host read it
at the same time: watchers of several machines over one shared root carry one host name,
and each used to apply every pending decision (an occurrence was counted twice)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from incidents import grouping, mirror, store
from incidents.layout import Root
from incidents.mirror import fleetwide, target
from tests.mirror.rows import make_bundle

SENT = 40
PASS = """
import sys
from incidents import fleet
from incidents.layout import Root
from incidents.mirror import target
root = Root(sys.argv[1])
target.bind(root.path, sys.argv[2], "a")
print(len(fleet.fleet_pass(root).applied))
"""


def test_two_passes_of_one_host_apply_each_decision_once(tmp_path: Path, pg_url: str) -> None:
    root = Root(tmp_path / "reports").ensure()
    make_bundle(root, "inbox", "inc_1", occurrences=1)
    target.bind(root.path, pg_url, "a")
    try:
        mirror.reindex(root)
        doc = store.read_incident(root.inbox / "inc_1")
        group = grouping.group_of(doc)
        conn = mirror.connect(root.db_path)
        try:
            for i in range(SENT):
                args = {
                    "group": group,
                    "from": f"host b (x{i})",
                    "last_seen": str(doc.get("last_seen") or doc["created_at"]),
                }
                fleetwide.queue_decision(conn, "a", "inc_1", "occurrence", args)
        finally:
            conn.close()
    finally:
        target.unbind(root.path)
    argv = [sys.executable, "-c", PASS, str(root.path), pg_url]
    passes = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    applied = [int(p.communicate(timeout=120)[0].strip() or 0) for p in passes]
    assert sum(applied) == SENT, applied
    assert store.read_incident(root.inbox / "inc_1")["occurrences"] == 1 + SENT


def test_an_occurrence_the_other_host_cannot_count_comes_back_to_be_worked(
    tmp_path: Path, pg_url: str
) -> None:
    """Host a's new incident is counted on host b's open one and closed here; b's incident
    closes before b's pass applies it: the occurrence is refused there, and a's incident
    goes back to a's inbox (it stayed closed as resolved, worked by nobody)."""
    from incidents import fleet
    from incidents.step import close as closing

    a, b = (Root(tmp_path / name).ensure() for name in ("a", "b"))
    make_bundle(b, "inbox", "ib_0", created_at="2026-02-17T03:00:00+00:00")
    make_bundle(a, "inbox", "ia_0", created_at="2026-02-17T03:00:05+00:00")
    for name, root in (("a", a), ("b", b)):
        target.bind(root.path, pg_url, name)
    try:
        mirror.reindex(b)
        mirror.reindex(a)
        assert [c[0] for c in fleet.fleet_pass(a).counted] == ["ia_0"]
        assert (a.bucket("resolved") / "ia_0").is_dir()
        folder = closing.archive(b, "ib_0", "resolved", "fixed by hand")  # `incidents archive`
        store.mirror_bundle(b, "resolved", folder, "archived", {"bucket": "resolved"})
        refused = fleet.fleet_pass(b).applied
        assert len(refused) == 1 and refused[0][2].startswith("refused"), refused
        back = fleet.fleet_pass(a).applied
        assert [(i, o.split(" ")[0]) for _, i, o in back] == [("ia_0", "reopened")], back
        assert (a.inbox / "ia_0").is_dir()
        assert store.read_incident(a.inbox / "ia_0")["status"] == "new"
    finally:
        for root in (a, b):
            target.unbind(root.path)
