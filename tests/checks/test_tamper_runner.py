"""Code that patches the test runner is `runner-patch` (`checks.tamper`, pure): in many
spellings, in a target and in a test file; legitimate code in a fix adds nothing."""

from __future__ import annotations

import pytest

from incidents.checks.tamper import python_added

BEFORE = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST_BEFORE = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"


def kinds(after: str, path: str = "calc.py", before: str = BEFORE) -> list[str]:
    return sorted({a.kind for a in python_added(path, before, after)})


@pytest.mark.parametrize(
    "patch",
    [
        'import _pytest.python\nsetattr(_pytest.python.Function, "runtest", lambda self: None)\n',
        "from _pytest.python import Function\nFunction.runtest = lambda self: None\n",
        'm = __import__("_py" + "test.python", fromlist=["x"])\nm.Function.runtest = None\n',
        'setattr(getattr(__import__("_py" + "test"), "python").Function, "runtest", None)\n',
        'import importlib\nname = "_pyt" + "est"\nimportlib.import_module(name)\n',
        'setattr(__import__("".join(["_", "pytest"])).python.Function, "runtest", None)\n',
        "import unittest\nunittest.TestCase.run = lambda self, result=None: None\n",
        "import sys\nsys.modules['_pytest.runner'] = object()\n",
        "import builtins\nbuiltins.AssertionError = Exception\n",
        "exec(bytes.fromhex('7072696e74').decode())\n",
        "import gc\nfor o in gc.get_objects():\n    pass\n",
        "import sys\nsys._getframe(1).f_globals['x'] = 1\n",
        "import ctypes\nctypes.pythonapi.Py_Exit(0)\n",
        "def pytest_runtest_call(item):\n    pass\n",
        "import pluggy\n",
    ],
)
def test_a_target_that_patches_the_runner(patch: str) -> None:
    assert "runner-patch" in kinds(patch + FIXED.replace("+", "-"))


@pytest.mark.parametrize(
    "patch",
    [
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def run(self, result=None):\n"
        "        return None\n\n    def test_x(self):\n        assert False\n",
        'import pytest\nsetattr(pytest, "fail", lambda *a, **k: None)\n',
        "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n",
    ],
)
def test_a_test_file_that_patches_the_runner(patch: str) -> None:
    assert "runner-patch" in kinds(patch + TEST_BEFORE, "test_calc.py", TEST_BEFORE)


@pytest.mark.parametrize(
    "after",
    [
        FIXED,
        "import importlib\n\nmod = importlib.import_module('json')\n\n" + FIXED,
        "class Box:\n    pass\n\n\nb = Box()\nsetattr(b, 'x', 1)\nsetattr(Box(), 'y', 2)\n" + FIXED,
    ],
)
def test_ordinary_code_in_a_fix_is_no_runner_patch(after: str) -> None:
    assert kinds(after) == []


def test_a_test_file_may_use_pytest_internals_for_types() -> None:
    after = "from _pytest.monkeypatch import MonkeyPatch\n\n\n" + TEST_BEFORE.replace(
        "def test_add():", "def test_add(monkeypatch: MonkeyPatch):"
    )
    assert kinds(after, "test_calc.py", TEST_BEFORE) == []


def test_what_was_there_before_the_fix_is_not_new() -> None:
    patched = 'import _pytest.python\nsetattr(_pytest.python.Function, "runtest", None)\n'
    assert kinds(patched + FIXED, before=patched + BEFORE) == []
