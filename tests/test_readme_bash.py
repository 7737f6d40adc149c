"""The README's bash recipe, extracted from the README and run with real bash: whatever
stops the script (an unset `${VAR:?}`, a failing command) is captured with the script's
exit status, which the script still exits with; a clean run captures nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import REPO

SECTION = "### From a bash script"


def recipe() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index(SECTION) :]
    found = re.search(r"```bash\n(.*?)```", section, re.S)
    assert found, "no ```bash block in the README's bash recipe"
    return found.group(1)


def run(tmp_path: Path, root: Root, **env: str) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    script = tmp_path / "nightly.sh"
    script.write_text(recipe())
    full = {k: v for k, v in os.environ.items() if k != "EXPORT_DIR"}
    full.update(INCIDENTS_ROOT=str(root.path), CAPTURE=str(REPO / "scripts" / "error_capture.py"))
    full.update(env)
    return subprocess.run(
        [bash, str(script)], cwd=tmp_path, env=full, capture_output=True, text=True, timeout=120
    )


def captured(root: Root) -> list[dict[str, object]]:
    if not root.inbox.is_dir():
        return []
    return [json.loads((f / "incident.json").read_text()) for f in sorted(root.inbox.iterdir())]


@pytest.fixture
def export(tmp_path: Path) -> Path:
    (tmp_path / "out").mkdir()
    return tmp_path / "export.py"


def test_an_unset_variable_is_captured_with_the_scripts_status(
    tmp_path: Path, root: Root, export: Path
) -> None:
    export.write_text("print('exported')\n")
    p = run(tmp_path, root)
    assert p.returncode != 0
    [doc] = captured(root)
    assert doc["exit_code"] == p.returncode and doc["step"] == "nightly_export"
    assert doc["message"] == "reading the configuration failed"
    log = (root.inbox / str(doc["incident_id"]) / "log_tail.txt").read_text()
    assert "set EXPORT_DIR to the export folder" in log


def test_a_failing_command_is_captured_with_its_status(
    tmp_path: Path, root: Root, export: Path
) -> None:
    export.write_text("import sys\nprint('half done')\nsys.exit(3)\n")
    p = run(tmp_path, root, EXPORT_DIR=str(tmp_path / "out"))
    assert p.returncode == 3
    [doc] = captured(root)
    assert doc["exit_code"] == 3 and doc["message"] == "exporting failed"


def test_a_clean_run_captures_nothing(tmp_path: Path, root: Root, export: Path) -> None:
    export.write_text("print('exported')\n")
    p = run(tmp_path, root, EXPORT_DIR=str(tmp_path / "out"))
    assert (p.returncode, captured(root)) == (0, []), p.stderr
    assert "exported" in p.stdout
