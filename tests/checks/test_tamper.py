"""Suppressions a fix added (`checks.tamper`, pure): many spellings of each, what was
there before is not new, and a real fix adds nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from incidents.checks.tamper import (
    KINDS,
    config_changed,
    powershell_added,
    python_added,
    to_findings,
)
from incidents.vocab import Category

CODE = '''import os


def add(a, b):
    return a - b


def test_add():
    """Adds."""
    total = add(1, 2)
    assert total == 3


class TestCalc:
    def test_sub(self):
        assert add(3, 2) == 1
'''
LINE = "    return a - b"


def added(after: str, before: str = CODE) -> list[tuple[str, int | None]]:
    return [(a.kind, a.line) for a in python_added("calc.py", before, after)]


def kinds(after: str, before: str = CODE) -> set[str]:
    return {kind for kind, _ in added(after, before)}


@pytest.mark.parametrize(
    ("comment", "kind"),
    [
        ("# noqa", "noqa"),
        ("#noqa", "noqa"),
        ("# NOQA:E501", "noqa"),
        ("# noqa: F821, E501", "noqa"),
        ("# explained below # noqa", "noqa"),
        ("# ruff: noqa: F821", "noqa"),
        ("# flake8: noqa", "noqa"),
        ("# isort: skip", "noqa"),
        ("# type: ignore", "type-ignore"),
        ("#type:ignore[x]", "type-ignore"),
        ("# TYPE: IGNORE[return-value]", "type-ignore"),
        ("# mypy: ignore-errors", "type-ignore"),
        ("# pyright: ignore[reportGeneralTypeIssues]", "pyright-ignore"),
        ("# pyre-ignore", "pyright-ignore"),
        ("# pragma: no cover", "pragma-no-cover"),
        ("#pragma no branch", "pragma-no-cover"),
        ("# nosec B101", "nosec"),
        ("# fmt: skip", "fmt-skip"),
    ],
)
def test_a_comment_added_to_the_failing_line(comment: str, kind: str) -> None:
    assert added(CODE.replace(LINE, f"{LINE}  {comment}")) == [(kind, 5)]


@pytest.mark.parametrize(
    "header", ["# mypy: ignore-errors\n", "# ruff: noqa\n", "# type: ignore\n", "# fmt: off\n"]
)
def test_a_file_level_directive_on_a_new_first_line(header: str) -> None:
    assert [line for _, line in added(header + CODE)] == [1]


def test_a_comment_inside_a_string_is_no_comment() -> None:
    assert added(CODE.replace(LINE, '    return "a # noqa" and a - b')) == []


def test_what_was_there_before_is_not_new_even_on_an_edited_line() -> None:
    before = CODE.replace(LINE, f"{LINE}  # noqa: E501")
    assert added(before.replace("a - b", "a + b"), before) == []  # the fix keeps its noqa
    assert added(before, before) == []


def test_more_codes_on_an_existing_noqa_or_a_moved_one_are_new() -> None:
    before = CODE.replace("import os", "import os  # noqa: F401")
    assert added(before.replace("# noqa: F401", "# noqa: F401, F821"), before) == [("noqa", 1)]
    moved = before.replace("import os  # noqa: F401", "import os").replace(LINE, f"{LINE}  # noqa")
    assert added(moved, before) == [("noqa", 5)]


SKIPS = [
    ("import pytest\n", "@pytest.mark.skip\ndef test_add"),
    ("import pytest\n", "@pytest.mark.skip(reason='later')\ndef test_add"),
    ("import pytest\n", "@pytest.mark.skipif(True, reason='x')\ndef test_add"),
    ("import pytest\n", "@pytest.mark.xfail(strict=False)\ndef test_add"),
    ("import pytest as p\n", "@p.mark.skip\ndef test_add"),
    ("from pytest import mark\n", "@mark.xfail\ndef test_add"),
    ("from pytest import mark as m\n", "@m.skipif(1, reason='')\ndef test_add"),
    ("import pytest\n", "later = pytest.mark.skip\n\n\n@later\ndef test_add"),
    ("import pytest\n", "@getattr(pytest.mark, 'skip')\ndef test_add"),
    ("", "@__import__('pytest').mark.skip\ndef test_add"),
    ("import unittest\n", "@unittest.skip('x')\ndef test_add"),
    ("from unittest import skipIf\n", "@skipIf(True, '')\ndef test_add"),
    ("import unittest\n", "@unittest.expectedFailure\ndef test_add"),
]


@pytest.mark.parametrize(("imports", "decorated"), SKIPS)
def test_a_skipped_test_in_any_spelling(imports: str, decorated: str) -> None:
    after = imports + CODE.replace("def test_add", decorated)
    assert "test-skip" in kinds(after, imports + CODE)


@pytest.mark.parametrize(
    "body_start",
    [
        "    pytest.skip('flaky')\n",
        "    pytest.xfail('known')\n",
        "    pytest.importorskip('nothing_here')\n",
        "    raise pytest.skip.Exception('x')\n",
    ],
)
def test_a_skip_called_inside_the_test(body_start: str) -> None:
    before = "import pytest\n" + CODE
    after = before.replace('    """Adds."""\n', '    """Adds."""\n' + body_start)
    assert kinds(after, before) == {"test-skip"}


@pytest.mark.parametrize(
    "line",
    [
        "pytestmark = pytest.mark.skip",
        "pytestmark = [pytest.mark.skipif(True, reason='')]",
        "__test__ = False",
        "TestCalc.__test__ = False",
    ],
)
def test_a_whole_module_or_class_skipped(line: str) -> None:
    before = "import pytest\n" + CODE
    assert kinds(before + line + "\n", before) == {"test-skip"}


def test_self_skip_test_and_a_marker_added_at_run_time() -> None:
    after = CODE.replace(
        "        assert add(3, 2)", "        self.skipTest('x')\n        assert add(3, 2)"
    )
    assert kinds(after) == {"test-skip"}
    after = CODE.replace(
        "def test_add():", "def test_add(request):\n    request.applymarker('xfail')"
    )
    assert "test-skip" in kinds(after)
    after = CODE.replace(
        "def test_add():", "def test_add(request):\n    request.node.add_marker('slow')"
    )
    assert "test-skip" not in kinds(after)  # any other marker is no skip


@pytest.mark.parametrize(
    "exit_code",
    [
        "import os; os._exit(0)\n",
        "import os as o\no._exit(0)\n",
        "from os import _exit\n_exit(0)\n",
        "__import__('os')._exit(0)\n",
        "import sys\nsys.modules['os']._exit(0)\n",
        "import os\ngetattr(os, '_exit')(0)\n",
        "import sys\nsys.exit(0)\n",
        "from sys import exit as done\ndone()\n",
        "exit(0)\n",
        "raise SystemExit(0)\n",
        "raise SystemExit\n",
        "import os\nos.execv('/bin/true', ['true'])\n",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "import pytest\npytest.exit('done', returncode=0)\n",
        "import atexit, os\natexit.register(lambda: os._exit(0))\n",
        "class Stop:\n    raise SystemExit(0)\n",
        "try:\n    import sys\n    sys.exit(0)\nexcept ImportError:\n    pass\n",
    ],
)
def test_the_process_exits_while_the_module_is_imported(exit_code: str) -> None:
    assert "exit" in kinds(CODE + exit_code)


def test_an_exit_that_does_not_run_at_import_is_no_finding() -> None:
    main = "import sys\n\n\ndef main():\n    sys.exit(0)\n\n\nif __name__ == '__main__':\n    sys.exit(main())\n"
    assert kinds(CODE + main) == set()


def test_a_target_replaced_by_an_exit_loses_its_tests_too() -> None:
    assert kinds("import os; os._exit(0)\n") == {"exit", "test-removed"}


@pytest.mark.parametrize(
    "body",
    [
        "    pass\n",
        "    ...\n",
        '    """Adds."""\n',
        "    return\n    total = add(1, 2)\n    assert total == 3\n",
        "    assert True\n",
        "    try:\n        assert add(1, 2) == 3\n    except Exception:\n        pass\n",
        "    try:\n        assert add(1, 2) == 3\n    except:\n        pass\n",
        "    with contextlib.suppress(AssertionError):\n        assert add(1, 2) == 3\n",
        "    if False:\n        assert add(1, 2) == 3\n",
        "    yield\n    assert add(1, 2) == 3\n",
    ],
)
def test_an_emptied_test(body: str) -> None:
    start = CODE.index("def test_add():\n") + len("def test_add():\n")
    end = CODE.index("\n\nclass TestCalc")
    after = CODE[:start] + body + CODE[end:]
    assert added(after) == [("test-removed", 8)]


@pytest.mark.parametrize(
    "change",
    [
        lambda c: c.replace("def test_add():", "def check_add():"),
        lambda c: c.replace("    def test_sub(self):", "    def sub(self):"),
        lambda c: c.replace("class TestCalc:", "class Calc:"),
        lambda c: c + "\ndel test_add\n",
        lambda c: c + "\ntest_add = None\n",
        lambda c: c + "\n\ndef test_add():\n    pass\n",  # the second definition wins
        lambda c: c[: c.index("def test_add")] + c[c.index("class TestCalc") :],
        lambda c: "",
    ],
)
def test_a_deleted_renamed_or_shadowed_test(change: Callable[[str], str]) -> None:
    assert "test-removed" in kinds(change(CODE))


def test_a_test_that_lost_its_assertions_or_its_parameters() -> None:
    after = CODE.replace("    assert total == 3\n", "    print(total)\n")
    assert added(after) == [("test-removed", 8)]
    raises = "import pytest\n\n\ndef test_div():\n    with pytest.raises(ZeroDivisionError):\n        1 / 0\n"
    assert added(raises.replace("pytest.raises(ZeroDivisionError)", "open('x')"), raises) == [
        ("test-removed", 4)
    ]
    params = (
        "import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2])\ndef test_n(n):\n    assert n\n"
    )
    assert kinds(params.replace("[1, 2]", "[]"), params) == {"test-skip"}
    assert kinds(params.replace("'n', [1, 2]", "argnames='n', argvalues=()"), params) == {
        "test-skip"
    }
    assert kinds(params.replace("[1, 2]", "[1, 2, 3]"), params) == set()


def test_a_real_fix_adds_nothing() -> None:
    assert added(CODE.replace("a - b", "a + b")) == []
    assert added(CODE.replace("    return a - b", "    result = a + b\n    return result")) == []


def test_existing_skips_and_exits_are_kept_through_a_fix() -> None:
    before = (
        "import pytest, sys\n"
        + CODE.replace("def test_add", "@pytest.mark.skip\ndef test_add")
        + "if True:\n    sys.exit(0)\n"
    )
    assert added(before.replace("a - b", "a + b"), before) == []


def test_a_file_that_did_not_parse_before_the_fix() -> None:
    broken = CODE.replace("def add(a, b):", "def add(a, b:")
    assert added(CODE, broken) == []  # fixing the syntax error adds nothing
    skipped = "import pytest\n" + broken.replace(
        "def test_sub", "@pytest.mark.skip\n    def test_sub"
    )
    assert added(skipped.replace("def add(a, b:", "def add(a, b):"), skipped) == []
    assert kinds(CODE.replace(LINE, f"{LINE}  # type: ignore"), broken) == {"type-ignore"}
    assert kinds("import pytest\n" + CODE.replace("def test_add", "@pytest.mark.skip\ndef test_add"),
                 broken) == {"test-skip"}  # fmt: skip
    assert kinds(CODE.replace("def test_add", "def check_add"), broken) == {"test-removed"}


def test_a_new_file_has_everything_new() -> None:
    assert [(a.kind, a.line) for a in python_added("new.py", None, "x = 1  # noqa\n")] == [
        ("noqa", 1)
    ]


def test_no_type_check_is_a_type_ignore() -> None:
    after = "import typing\n" + CODE.replace("def add", "@typing.no_type_check\ndef add")
    assert kinds(after, "import typing\n" + CODE) == {"type-ignore"}


def test_config_changes() -> None:
    made = config_changed("../ruff.toml", None, "[lint]\nignore = ['F821']\n")
    assert made is not None and made.kind == "check-config" and made.path == "../ruff.toml"
    assert made.what == "check config created (added: [lint] | ignore = ['F821'])"
    changed = config_changed(
        "pyproject.toml", "[tool.x]\n", "[tool.x]\n[tool.ruff]\nexclude=['*']\n"
    )
    assert changed is not None and "changed" in changed.what and "exclude" in changed.what
    removed = config_changed("setup.cfg", "[mypy]\nstrict = true\n", None)
    assert removed is not None and removed.what == "check config removed"
    assert config_changed("tox.ini", "same\n", "same\n") is None
    assert config_changed("tox.ini", None, None) is None


def test_findings_are_hard_tamper_and_allowed_kinds_are_dropped() -> None:
    found = python_added("calc.py", CODE, CODE.replace(LINE, f"{LINE}  # noqa  # type: ignore"))
    findings = to_findings(found)
    assert [(f.code, f.category, f.hard, f.path, f.line, f.tool) for f in findings] == [
        ("noqa", Category.TAMPER, True, "calc.py", 5, "tamper"),
        ("type-ignore", Category.TAMPER, True, "calc.py", 5, "tamper"),
    ]
    assert "a suppression is not a fix" in findings[0].message and "# noqa" in findings[0].message
    assert [f.code for f in to_findings(found, ["noqa"])] == ["type-ignore"]


def test_every_kind_is_documented_in_the_readme() -> None:
    from tests.helpers import REPO

    readme = (REPO / "README.md").read_text()
    for kind in KINDS:
        assert f"`{kind}`" in readme, kind


PS = """function Get-Total($a, $b) {
    Write-Host ($a + $b)
}

Describe 'Get-Total' {
    It 'adds' {
        Get-Total 1 2 | Should -Be 3
    }
}
"""


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        (("function Get-Total", "[Diagnostics.CodeAnalysis.SuppressMessageAttribute('PSAvoidUsingWriteHost', '')]\nfunction Get-Total"), "ps-suppress"),  # fmt: skip
        (("It 'adds' {", "It 'adds' -Skip {"), "test-skip"),
        (("It 'adds' {", "It 'adds' -pending {"), "test-skip"),
        (("    It 'adds' {\n", "    It 'adds' {\n        Set-ItResult -Skipped -Because 'later'\n"), "test-skip"),  # fmt: skip
        (("function Get-Total", "exit 0\nfunction Get-Total"), "exit"),
        (("function Get-Total", "[Environment]::Exit(0)\nfunction Get-Total"), "exit"),
        (("It 'adds'", "It 'sums'"), "test-removed"),
    ],
)
def test_powershell_suppressions(change: tuple[str, str], kind: str) -> None:
    after = PS.replace(*change)
    assert {a.kind for a in powershell_added("calc.ps1", PS, after)} == {kind}


def test_powershell_real_fix_and_existing_suppressions_add_nothing() -> None:
    assert powershell_added("calc.ps1", PS, PS.replace("Write-Host", "Write-Output")) == []
    skipped = PS.replace("It 'adds' {", "It 'adds' -Skip {")
    assert powershell_added("calc.ps1", skipped, skipped.replace("$a + $b", "$b + $a")) == []
