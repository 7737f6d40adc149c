"""A hand-written bundle found by review to reach outside itself through the API: a folder
inside original_scripts/ or final_scripts/ that is a symbolic link was followed, so the
diff showed a file from anywhere the server can read."""

from __future__ import annotations

import json
from pathlib import Path

from incidents.layout import Root
from tests.helpers import Cli
from tests.serve.conftest import escalate
from tests.serve.server import Server


def test_a_diff_does_not_follow_a_linked_folder_out_of_the_bundle(
    server: Server, root: Root, cli: Cli, fast: Path, tmp_path: Path
) -> None:
    stuck = escalate(cli, fast)
    folder = root.path / "error_archive" / "escalated" / stuck
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "s.py").write_text("TOPSECRET_ORIGINAL\n")
    (folder / "original_scripts" / "evil").symlink_to(outside, target_is_directory=True)
    (folder / "final_scripts" / "evil").mkdir()
    (folder / "final_scripts" / "evil" / "s.py").write_text("final\n")
    meta = json.loads((folder / "metadata.json").read_text())
    meta["target_files"] = ["evil/s.py", *meta.get("target_files", [])]
    (folder / "metadata.json").write_text(json.dumps(meta))

    r = server.call("GET", f"/api/incidents/{stuck}")
    assert r.status == 200, r.body
    assert b"TOPSECRET_ORIGINAL" not in r.body
    [diff] = [d for d in r.json()["review"]["diffs"] if d["path"] == "evil/s.py"]
    assert diff["text"].startswith("not shown")
