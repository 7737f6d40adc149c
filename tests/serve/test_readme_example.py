"""The README's client example for `incidents serve` runs as written against a real server
(only its port changed) and requeues an escalated incident."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from incidents.layout import Root
from tests.helpers import REPO, Cli
from tests.serve.conftest import escalate
from tests.serve.server import Server


def example() -> str:
    section = (REPO / "README.md").read_text().split("### serve — ", 1)[1].split("\n### ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def test_the_readme_client_requeues(
    server: Server, cli: Cli, fast: Path, root: Root, tmp_path: Path
) -> None:
    incident_id = escalate(cli, fast)
    code = example().replace("127.0.0.1:8765", server.host)
    assert code != example()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert f"'incident_id': '{incident_id}'" in done.stdout and "'requeue'" in done.stdout
    assert (root.inbox / incident_id).is_dir()
