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
