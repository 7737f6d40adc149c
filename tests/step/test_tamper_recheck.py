"""Suppression is not a fix: a fixer (a stand-in program on PATH) or a handed-off agent that
silences a failure instead of fixing it is caught by the recheck, with the real ruff, mypy
and pytest on real files, and the incident does not end resolved."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Protocol

import pytest

from incidents.layout import Root
from incidents.models import ErrorReport, Finding
from tests.helpers import FAST, TYPED, Cli, capture, ctx_of, incidents, use_config
from tests.stand_ins import stand_in

UNDEFINED = "def value() -> int:\n    return undefined_name\n"  # ruff F821: hard
FAILING_TEST = "def add(a, b):\n    return a - b\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
TESTS = '[checks]\ntools = ["pytest"]\n'
ONLY_AIDER = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)

# stand-in fixers: each edits its target (the last argv element, `{files}`) in one way
ADD_NOQA = (
    "p = pathlib.Path(sys.argv[-1]); text = p.read_text()\n"
    "if 'noqa' not in text:\n"
    "    p.write_text(text.replace('undefined_name', 'undefined_name  # noqa'))"
)
ADD_TYPE_IGNORE = (
    "p = pathlib.Path(sys.argv[-1])\n"
    "p.write_text(p.read_text().replace('return \"x\"', 'return \"x\"  #type:ignore[return-value]'))"
)
RUFF_TOML_ABOVE = "pathlib.Path('../ruff.toml').write_text('[lint]\\nignore = [\"F821\"]\\n')"
EXIT_ON_IMPORT = "pathlib.Path(sys.argv[-1]).write_text('import os; os._exit(0)\\n')"
SKIP_THE_TEST = (
    "p = pathlib.Path(sys.argv[-1])\n"
    "p.write_text('import pytest as pt\\n' + p.read_text().replace("
    "'def test_add', '@pt.mark.skip\\ndef test_add'))"
)
REAL_FIX = (
    "p = pathlib.Path(sys.argv[-1])\n"
    "p.write_text(p.read_text().replace('undefined_name', '1').replace('a - b', 'a + b'))"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The workdir, one folder below a project folder of the test's own."""
    path = tmp_path / "project" / "ws"
    path.mkdir(parents=True)
    return path


class Drive(Protocol):
    def __call__(
        self, fixer: str, checks: str, target: str, content: str, policy: str = ""
    ) -> str: ...


@pytest.fixture
def drive(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path, ws: Path
) -> Drive:
    """Only aider on, a stand-in running `fixer`; capture `target` holding `content` and
    drive the incident through aider's call and its recheck. Returns the incident id."""

    def run(fixer: str, checks: str, target: str, content: str, policy: str = "") -> str:
        stand_in(bin_dir, "aider", fixer)
        use_config(tmp_path, monkeypatch, checks + ONLY_AIDER + policy)
        incident_id = capture(cli, ws=ws, target=target, content=content)
        r = cli("drive", incident_id)
        assert r.code == 0, r.err
        assert "S1_AIDER_FIX -> S1_AIDER_RECHECK" in r.out, r.out
        return incident_id

    return run


def tamper_findings(root: Root, incident_id: str, label: str = "1") -> list[Finding]:
    path = root.runs_dir(incident_id) / f"error_report_attempt_{label}.json"
    report = ErrorReport.model_validate_json(path.read_text())
    return [f for f in report.issues if f.category == "tamper"]


def escalated(root: Root, incident_id: str) -> bool:
    assert not (root.bucket("resolved") / incident_id).exists(), "a suppression was resolved"
    return (root.bucket("escalated") / incident_id).is_dir()


def test_a_noqa_on_the_failing_line_is_not_a_fix(cli: Cli, root: Root, drive: Drive) -> None:
    incident_id = drive(ADD_NOQA, FAST, "names.py", UNDEFINED)
    assert escalated(root, incident_id)
    [found] = tamper_findings(root, incident_id)
    assert (found.path, found.line, found.code, found.hard) == ("names.py", 2, "noqa", True)
    assert "added `# noqa`" in found.message and "not a fix" in found.message
    shown = cli("status", incident_id).out
    assert "suppressions added instead of fixes, not accepted: noqa in names.py:2" in shown
    assert cli("review").code == 0  # a reviewer sees it like any finding
    page = html.unescape((root.path / "error_review" / "index.html").read_text())
    assert "tamper noqa names.py: added `# noqa`" in page and "1 tamper" in page


def test_a_type_ignore_is_not_a_fix(root: Root, drive: Drive) -> None:
    bad = 'def value() -> int:\n    return "x"\n'
    incident_id = drive(ADD_TYPE_IGNORE, TYPED, "typed.py", bad)
    assert escalated(root, incident_id)
    assert [(f.code, f.line) for f in tamper_findings(root, incident_id)] == [("type-ignore", 2)]


def test_a_ruff_toml_written_above_the_workdir_is_not_a_fix(
    root: Root, drive: Drive, ws: Path
) -> None:
    incident_id = drive(RUFF_TOML_ABOVE, FAST, "names.py", UNDEFINED)
    assert escalated(root, incident_id)
    above = str(ws.parent / "ruff.toml")
    found = [(f.code, f.path) for f in tamper_findings(root, incident_id)]
    assert ("check-config", above) in found or not Path(above).exists(), found


def test_a_test_target_that_exits_zero_on_import_is_not_a_fix(
    root: Root, drive: Drive, ws: Path
) -> None:
    incident_id = drive(EXIT_ON_IMPORT, TESTS, "test_calc.py", FAILING_TEST)
    assert escalated(root, incident_id)
    assert {f.code for f in tamper_findings(root, incident_id)} == {"exit", "test-removed"}


PATCH_THE_RUNNER = (
    "p = pathlib.Path(sys.argv[-1])\n"
    "p.write_text('import _pytest.python\\n\\n'\n"
    "             'setattr(_pytest.python.Function, \"runtest\", lambda self: None)\\n\\n\\n'\n"
    "             + p.read_text())"
)


def test_a_target_that_patches_the_test_runner_is_not_a_fix(
    root: Root, drive: Drive, ws: Path
) -> None:
    (ws / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    incident_id = drive(PATCH_THE_RUNNER, TESTS, "calc.py", "def add(a, b):\n    return a - b\n")
    assert "a - b" in (ws / "calc.py").read_text()  # not fixed: only the runner was patched
    assert escalated(root, incident_id)


OBFUSCATED_PATCH = (
    "p = pathlib.Path(sys.argv[-1])\n"
    "p.write_text('import codecs\\n'\n"
    '             \'m = __import__(codecs.decode("_clgrfg.clguba", "rot13"), fromlist=["x"])\\n\'\n'
    '             \'getattr(m, "Fun" + "ction").runtest.__code__ = (lambda self: None).__code__\\n\\n\\n\'\n'
    "             + p.read_text())"
)


@pytest.mark.parametrize("fixer", [PATCH_THE_RUNNER, OBFUSCATED_PATCH])
def test_the_pytest_guard_catches_a_patched_runner_the_rules_let_through(
    root: Root, drive: Drive, ws: Path, fixer: str
) -> None:
    """With the static rule accepted on purpose, the guard plugin in pytest's own process
    still sees the runner patched: the run is not clean."""
    (ws / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    policy = '[policy]\nallow_suppressions = ["runner-patch"]\n'
    incident_id = drive(fixer, TESTS, "calc.py", "def add(a, b):\n    return a - b\n", policy)
    assert escalated(root, incident_id)
    path = root.runs_dir(incident_id) / "error_report_attempt_1.json"
    report = ErrorReport.model_validate_json(path.read_text())
    assert [f.code for f in report.issues if f.category == "tamper"] == ["runner-patched"]


def test_a_skipped_test_is_not_a_fix(root: Root, drive: Drive) -> None:
    incident_id = drive(SKIP_THE_TEST, TESTS, "test_calc.py", FAILING_TEST)
    assert escalated(root, incident_id)
    [found] = tamper_findings(root, incident_id)
    assert (found.code, found.line) == ("test-skip", 6) and "pytest.mark.skip" in found.message


def test_a_real_fix_is_still_resolved(root: Root, drive: Drive) -> None:
    incident_id = drive(REAL_FIX, FAST, "names.py", UNDEFINED)
    assert (root.bucket("resolved") / incident_id).is_dir()
    baselines = [p.name for p in root.runs_dir(incident_id).glob("tamper_baseline_*")]
    assert baselines == ["tamper_baseline_step_1.json"]  # kept by the baseline check


def test_a_real_fix_in_a_test_file_is_shown_to_a_person(root: Root, drive: Drive) -> None:
    """The code under test lives in the test file: the fix is real, but a changed test
    file is the specification changed, so a person sees it before it is resolved."""
    incident_id = drive(REAL_FIX, TESTS, "test_calc.py", FAILING_TEST)
    assert escalated(root, incident_id)
    path = root.runs_dir(incident_id) / "error_report_attempt_1.json"
    assert ErrorReport.model_validate_json(path.read_text()).summary.total_issues == 0
    ctx = ctx_of(root, incident_id)
    assert ctx.escalation_kind == "review_fix"
    assert "test_calc.py: a test file changed" in str(ctx.escalation_reason)


def test_an_allowed_kind_is_accepted(root: Root, drive: Drive, ws: Path) -> None:
    policy = '[policy]\nallow_suppressions = ["noqa", "pragma-no-cover"]\n'
    incident_id = drive(ADD_NOQA, FAST, "names.py", UNDEFINED, policy)
    assert (root.bucket("resolved") / incident_id).is_dir()
    assert (ws / "names.py").read_text().endswith("# noqa\n")


def test_an_unknown_kind_in_allow_suppressions_is_a_config_error(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, '[policy]\nallow_suppressions = ["noqa", "everything"]\n')
    r = cli("status")
    assert r.code != 0
    assert "policy.allow_suppressions.1: must be one of 'noqa'" in r.err
    assert "got 'everything'" in r.err


def test_the_next_tier_is_told_and_a_suppression_stays_a_finding_until_undone(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path, ws: Path
) -> None:
    # aider adds the noqa; codex only reads its prompt: the noqa, older than codex's call,
    # is still not the fix
    stand_in(bin_dir, "aider", ADD_NOQA)
    stand_in(bin_dir, "codex", "sys.stdin.read()")
    tiers = '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "on"\n[tiers.claude]\nmode = "off"\n'
    use_config(tmp_path, monkeypatch, FAST + tiers)
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    r = cli("drive", incident_id)
    assert r.code == 0 and "S2_CODEX_FIX -> S2_CODEX_RECHECK" in r.out, r.out + r.err
    assert escalated(root, incident_id)
    assert [f.code for f in tamper_findings(root, incident_id, "2")] == ["noqa"]
    prompt = (root.runs_dir(incident_id) / "prompt_attempt_2.md").read_text()
    assert "## Suppressions are not accepted" in prompt
    assert "added `# noqa`" in prompt and "a suppression is not a fix" in prompt


def test_a_handed_off_agent_that_adds_a_noqa(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ws: Path
) -> None:
    handoff = '[tiers.aider]\nmode = "handoff"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
    use_config(tmp_path, monkeypatch, FAST + handoff)
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    assert "(AWAIT_HANDOFF)" in cli("drive", incident_id).out
    assert cli("claim", incident_id, "--agent", "skill").code == 0
    target = ws / "names.py"
    target.write_text(target.read_text().replace("undefined_name", "undefined_name  # NOQA:F821"))
    assert cli("submit", incident_id, "--notes", "silenced it").code == 0
    r = cli("drive", incident_id)
    assert r.code == 0 and "S1_AIDER_RECHECK" in r.out, r.out + r.err
    assert escalated(root, incident_id)
    assert [(f.code, f.line) for f in tamper_findings(root, incident_id)] == [("noqa", 2)]


def test_a_tick_killed_after_the_fixer_ran_still_finds_the_suppression(
    root: Root, tmp_path: Path, ws: Path
) -> None:
    """The fixer adds the noqa, then kills the tick that runs it: the redo runs the fixer
    again on the file it already changed. The recheck must still see a new noqa."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    killed = tmp_path / "killed"  # outside the workdir: a fixer's own files there are reverted
    stand_in(bin_dir, "aider", ADD_NOQA + (
        f"\nif not os.path.exists({str(killed)!r}):\n"
        f"    pathlib.Path({str(killed)!r}).write_text('')\n"
        "    os.kill(os.getppid(), 9)"
    ))  # fmt: skip
    # without the sandbox: under bubblewrap a fixer can neither see its tick nor write there
    (tmp_path / "incidents.toml").write_text(FAST + ONLY_AIDER + '[tiers]\nsandbox = "none"\n')
    env = {**os.environ, "INCIDENTS_ROOT": str(root.path), "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "INCIDENTS_CONFIG": str(tmp_path / "incidents.toml")}  # fmt: skip
    (ws / "names.py").write_text(UNDEFINED)
    incident_id = incidents(
        "capture", "--step", "lint", "--message", "m", "--python-file", "names.py",
        "--workdir", str(ws), "--no-dedupe", env=env, check=True,
    ).stdout.strip()  # fmt: skip
    first = incidents("drive", incident_id, env=env)
    assert first.returncode == -9 and killed.exists(), first.stdout + first.stderr
    assert "# noqa" in (ws / "names.py").read_text()
    again = incidents("drive", incident_id, env=env)
    assert again.returncode == 0, again.stderr
    assert escalated(root, incident_id)
    assert [f.code for f in tamper_findings(root, incident_id)] == ["noqa"]


def test_a_requeued_escalation_does_not_adopt_the_suppression_it_was_escalated_for(
    cli: Cli, root: Root, drive: Drive, bin_dir: Path
) -> None:
    """The rejected `# type: ignore` stays in the target after the escalation: the requeued
    incident's new baseline check is compared with the first one, so it is still a finding."""
    bad = 'def value() -> int:\n    return "x"\n'
    incident_id = drive(ADD_TYPE_IGNORE, TYPED, "typed.py", bad)
    assert escalated(root, incident_id)
    stand_in(bin_dir, "aider", "pass")  # the next pass changes nothing
    r = cli("resolve-escalation", incident_id, "--guidance", "try again", "--requeue")
    assert r.code == 0, r.err
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert escalated(root, incident_id), r.out
    assert "S0_BASELINE_CHECK -> S1_AIDER_FIX" in r.out, r.out  # its baseline found it
    labels = sorted(p.stem.rsplit("_", 1)[1] for p in
                    root.runs_dir(incident_id).glob("error_report_attempt_*.json"))  # fmt: skip
    requeued_baseline = labels[-2]  # then aider's recheck
    found = [(f.code, f.line) for f in tamper_findings(root, incident_id, requeued_baseline)]
    assert found == [("type-ignore", 2)]
