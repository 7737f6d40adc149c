"""`incidents review`: the page for an archive built the real way (capture + drive)."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from incidents.cli import main
from incidents.layout import Root
from incidents.review import requeue_command
from tests.helpers import Cli, incidents
from tests.review.archive import build_real, write_broken_bundle, write_handoff_bundle


@pytest.fixture
def archive(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    ids = build_real(cli, tmp_path, monkeypatch)
    write_handoff_bundle(
        root, "incident_20991231_000000_deploy_hand", at="2099-12-31T00:00:00+00:00"
    )
    write_broken_bundle(root, "incident_20200101_000000_fetch_broken")
    ids["handoff"], ids["broken"] = (
        "incident_20991231_000000_deploy_hand",
        "incident_20200101_000000_fetch_broken",
    )
    return ids


def details(page: str) -> dict[str, str]:
    blob = re.search(r'<script type="application/json" id="details">(.*?)</script>', page, re.S)
    assert blob is not None
    doc: dict[str, str] = json.loads(blob.group(1))
    return doc


def cards(page: str, bucket: str) -> list[str]:
    return re.findall(rf'<article class="card" id="([^"]+)" data-bucket="{bucket}"', page)


def test_page_of_a_mixed_archive(cli: Cli, root: Root, archive: dict[str, str]) -> None:
    r = cli("review")
    assert r.code == 0, r.err
    path = root.path / "error_review" / "index.html"
    assert r.out.startswith(f"{path}: 5 escalated, 1 resolved")
    page = path.read_text()
    # newest first: the hand-written 2099 bundle, then the real ones, the 2020 one last
    escalated = cards(page, "escalated")
    assert escalated[0] == archive["handoff"] and escalated[-1] == archive["broken"]
    assert set(escalated) == {
        archive[k] for k in ("ai", "quarantined", "infra", "handoff", "broken")
    }
    assert cards(page, "resolved") == [archive["resolved"]]
    # self-contained: no external assets, no network
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    # per card: reason, step, failure class, signature, occurrences, the chart, the command
    assert "claude made no progress; no further fixer tier enabled" in page
    assert "definitely-not-installed-linter" in page and "infra_failure" in page
    assert "step: typecheck" in page and "class: unknown" in page and "occurrences: 3" in page
    assert html.escape("unknown | typecheck | typed.py failed") in page
    assert page.count('<svg class="chart"') == 6
    assert 'data-bucket="resolved" data-step="format"' in page
    for kind in ("ai", "quarantined", "infra"):
        assert html.escape(requeue_command(archive[kind], str(root.path))) in page
    assert "resolve-escalation " + archive["resolved"] not in page  # resolved: no requeue


def test_details_timeline_fixes_diff_and_notes(
    cli: Cli, root: Root, archive: dict[str, str]
) -> None:
    assert cli("review").code == 0
    body = details((root.path / "error_review" / "index.html").read_text())
    ai = body[archive["ai"]]
    for state in ("captured", "check 0", "S1_AIDER_RECHECK", "AI attempt 1", "S4_QUARANTINE"):
        assert f"<td>{state}</td>" in ai
    # check 1 fixed the first type error; the chart data: type 2 -> 1
    assert "type: 2" in ai and "<td>1</td><td>type: 1</td><td><ul" in ai
    assert "Incompatible return value type" in ai
    assert "aider: replaced the string literal returned by first()" in ai  # the AI notes
    assert "claude: I could not fix second()" in ai
    # original vs final: the aider change is the diff
    assert '<span class="del">-    return &quot;one&quot;</span>' in ai
    assert '<span class="add">+    return 1</span>' in ai
    assert "unchanged: the final file is the original" in body[archive["quarantined"]]
    hand = body[archive["handoff"]]
    assert "original not kept" in hand and "(handoff)" in hand
    assert "rewrote rollback &lt;b&gt;order&lt;/b&gt;" in hand  # notes are escaped
    assert "ruff F401 deploy.py" in hand  # introduced by the attempt
    assert (
        "metadata.json" in body[archive["broken"]] and "not valid JSON" in body[archive["broken"]]
    )
    assert "<td>S_SUCCESS</td>" in body[archive["resolved"]]
    # a check whose tool could not run gave no answer: never shown as clean
    infra = body[archive["infra"]]
    assert "not checked: ruff: program not found: definitely-not-installed-linter" in infra
    assert ">clean<" not in infra


def test_filters_cover_step_class_and_reason(cli: Cli, root: Root, archive: dict[str, str]) -> None:
    assert cli("review").code == 0
    page = (root.path / "error_review" / "index.html").read_text()
    steps = re.search(r'<select name="step">(.*?)</select>', page)
    assert steps is not None
    values = re.findall(r'<option value="([^"]*)"', steps.group(1))
    assert values == ["", "deploy", "fetch", "format", "lint", "typecheck", "types"]
    assert '<select name="class">' in page and '<select name="reason">' in page
    assert '<option value="same error after 2 attempts">' in page


def test_empty_archive_and_json(cli: Cli, root: Root) -> None:
    root.path.mkdir()  # a root nothing was captured in yet (review never creates one)
    r = cli("review", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["escalated"] == 0 and doc["resolved"] == 0
    page = Path(doc["path"]).read_text()
    assert "No escalated incidents." in page and "No resolved incidents." in page


def test_open_starts_the_default_browser(root: Root, tmp_path: Path) -> None:
    seen = tmp_path / "opened.txt"
    browser = tmp_path / "fake-browser"
    browser.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(seen)!r}, 'w').write(sys.argv[1])\n"
    )
    browser.chmod(0o755)
    env = {"BROWSER": str(browser), "PATH": "/usr/bin:/bin", "INCIDENTS_ROOT": str(root.path)}
    root.path.mkdir()
    done = incidents("review", "--open", env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert seen.read_text() == (root.path / "error_review" / "index.html").as_uri()


def _has_command(name: str) -> bool:
    return main([name, "--help"]) == 0


def test_requeue_through_the_command_on_the_page(
    cli: Cli, root: Root, archive: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    if not _has_command("resolve-escalation"):
        pytest.skip(
            "`incidents resolve-escalation` (issue: escalation resolution) is not there yet"
        )
    assert cli("review").code == 0
    page = (root.path / "error_review" / "index.html").read_text()
    incident_id = archive["quarantined"]
    found = re.search(
        rf'<code class="cmd" title="requeue">(\S*incidents resolve-escalation {incident_id} [^<]*)</code>',
        page,
    )
    assert found is not None
    # exactly as printed, from a shell whose PATH does not have the venv
    argv = shlex.split(html.unescape(found.group(1)))
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (root.inbox / incident_id).is_dir()
    assert not (root.bucket("escalated") / incident_id).exists()
