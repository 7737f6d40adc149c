"""A check must not leave what every Python process loads at start-up or can import,
outside the workdir: code under judgement that writes a `.pth`, a `usercustomize.py` or
a package into the user's site folder while a check runs it is judged by what it planted
on the next check (and the user's own runs load it), after the fixer withdraws the
planting from the source. The folder is the user site under a home of the test's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import ctx_of
from tests.step import test_tamper_recheck as recheck
from tests.step.test_cleanroom_verdicts import BUGGY, TEST_CALC, report, writes
from tests.step.test_tamper_recheck import TESTS, Drive

ws, drive = recheck.ws, recheck.drive  # the fixtures, shared

HOOK = "import builtins\\n"  # harmless when loaded: the test is about its presence


SITE = "'.local' / 'lib' / 'python3.99' / 'site-packages'"


def plants(name: str, folder: str = SITE) -> str:
    """A real fix of `add` that, when run, writes `name` into the user site folder."""
    return (
        f"from pathlib import Path\n\n_D = Path.home() / {folder}\n"
        f"(_D / {name!r}).parent.mkdir(parents=True, exist_ok=True)\n"
        f"(_D / {name!r}).write_text({HOOK!r})\n\n\n"
        "def add(a: int, b: int) -> int:\n    return a + b\n"
    )


@pytest.mark.parametrize("name", ["zz_hook.pth", "usercustomize.py", "numfix/__init__.py"])
def test_a_start_up_file_a_check_left_is_taken_back_and_fails_it(
    root: Root, drive: Drive, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(plants(name)), TESTS, "calc.py", BUGGY)
    assert not (root.bucket("resolved") / incident_id).exists()
    top = name.split("/")[0]
    assert not list(home.glob(f".local/lib/*/site-packages/{top}")), "left in place"
    found = [f for f in report(root, incident_id).issues if f.code == "planted"]
    assert found and top in found[0].message and found[0].hard
    assert list(root.runs_dir(incident_id).glob(f"planted-*/*{top}"))  # kept as evidence
    assert ctx_of(root, incident_id).escalation_kind is not None


def test_a_fix_that_writes_other_files_in_the_home_folder_resolves(
    root: Root, drive: Drive, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (ws / "test_calc.py").write_text(TEST_CALC)
    fix = plants("notes.txt", "'.cache' / 'calc'")
    incident_id = drive(writes(fix), TESTS, "calc.py", BUGGY)
    assert (root.bucket("resolved") / incident_id).is_dir()
