"""Gaming a check without a suppression comment (`checks.tamper`, pure): exits spelled
through `vars()`/`__dict__`/computed names, process hooks, code that knows it runs under a
test, vacuous assertions, weakened types, each with the ordinary code that is no finding."""

from __future__ import annotations

import pytest

from incidents.checks.tamper import KINDS, python_added

CALC = "def add(a: int, b: int) -> int:\n    return a - b\n"
FIXED = "def add(a: int, b: int) -> int:\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n"
TYPED = "def total() -> int:\n    return '5'\n\n\ndef scale(x: int, k: int = 2) -> int:\n    return x * k\n"


def kinds(after: str, before: str = CALC, path: str = "calc.py") -> set[str]:
    return {a.kind for a in python_added(path, before, after)}


def test_every_new_kind_is_in_the_table() -> None:
    assert {"process-hook", "test-aware", "assert-weakened", "type-weakened"} <= set(KINDS)


@pytest.mark.parametrize(
    "spelling",
    [
        'import os\nvars(os)["_ex" + "it"](0)\n',
        'import os\nos.__dict__["_exit"](0)\n',
        'import os\nos.__dict__.get("_exit")(0)\n',
        'import os\ngetattr(os, "_e" + "xit")(0)\n',
        "from os import _exit as leave\nleave(0)\n",
        "import os as o\no._exit(0)\n",
        'import sys\nsys.modules["os"]._exit(0)\n',
        'import sys\nsys.modules.get("os")._exit(0)\n',
        '__import__("os")._exit(0)\n',
        'import os\nquit_now = vars(os)["_" + "exit"]\n\n\ndef f():\n    quit_now(0)\n',
        "import os\nname = input()\ngetattr(os, name)(0)\n",
        'import os\nvars(os)[chr(95) + "exit"](0)\n',
        'import sys\ngetattr(sys, "".join(map(chr, [101, 120])))(0)\n',
        "import signal\nsignal.__dict__[x]\n",
        'import operator, os\noperator.attrgetter("_exit")(os)(0)\n',
        'import os\nvars(os).get("_exit")(0)\n',
        'import os\n[v for k, v in vars(os).items() if k.endswith("exit")][0](0)\n',
        'import os\nobject.__getattribute__(os, "_exit")(0)\n',
    ],
)
def test_an_exit_however_it_is_reached(spelling: str) -> None:
    assert "exit" in kinds(CALC + spelling)


def test_ordinary_dynamic_access_is_no_exit() -> None:
    ordinary = (
        'import os\nimport sys\n\nHOME = os.environ.get("HOME")\nFROZEN = getattr(sys, "frozen", False)\n'
        'SEP = vars(os)["sep"]\nopts = {"a": 1}\nkey = input()\nv = getattr(opts, key, None)\n'
        'how = opts.get("exit")\nfor k, v in opts.items():\n    print(k, v)\n'
    )
    assert kinds(FIXED + ordinary) == set()


ATEXIT = (
    "import atexit\nimport os\nimport re\nimport sys\n\n\ndef add(a: int, b: int) -> int:\n"
    "    return a - b\n\n\ndef _done() -> None:\n    for arg in sys.argv:\n"
    '        if arg.startswith("--junit-xml="):\n            path = arg.split("=", 1)[1]\n'
    "            with open(path) as fh:\n                text = fh.read()\n"
    '            text = re.sub(r"<failure.*?</failure>", "", text, flags=re.S)\n'
    '            with open(path, "w") as fh:\n                fh.write(text)\n'
    "    sys.stdout.flush()\n    EXIT\n\n\nif GUARD:\n    atexit.register(_done)\n"
)


@pytest.mark.parametrize("leave", ['vars(os)["_ex" + "it"](0)', "os._exit(0)", "sys.exit(0)"])
@pytest.mark.parametrize("guard", ['"pytest" in sys.modules', "True"])
def test_the_testers_atexit_fixers(leave: str, guard: str) -> None:
    found = kinds(ATEXIT.replace("EXIT", leave).replace("GUARD", guard))
    assert "process-hook" in found
    assert ("test-aware" in found) == ("pytest" in guard)


@pytest.mark.parametrize(
    "hook",
    [
        "import atexit\n\n\ndef bye():\n    open('/tmp/x', 'w').write('')\n\n\natexit.register(bye)\n",
        "import atexit, pathlib\natexit.register(lambda: pathlib.Path('r.xml').write_text(''))\n",
        "import atexit, sys\n\n\n@atexit.register\ndef bye():\n    sys.exit(0)\n",
        "import atexit\nfrom helpers import cleanup\natexit.register(cleanup)\n",
        "import atexit, shutil\natexit.register(shutil.rmtree, 'reports')\n",
        "import signal\nsignal.signal(signal.SIGTERM, lambda *a: None)\n",
        "import sys\nsys.excepthook = lambda *a: None\n",
        "import sys\nsys.settrace(lambda *a: None)\n",
        "import sys\nsys.setprofile(None)\n",
        "import threading\nthreading.excepthook = print\n",
        "import faulthandler\nfaulthandler.disable()\n",
        "import sys\nsys.unraisablehook = print\n",
        "import weakref, os\n\n\nclass K:\n    pass\n\n\n_k = K()\nweakref.finalize(_k, os.remove, 'r.xml')\n",
        "import sys\n\n\nclass _Keep:\n    def __del__(self):\n        sys.exit(0)\n\n\n_keep = _Keep()\n",
        "import atexit as ax, subprocess\n\n\ndef _run():\n    subprocess.run(['true'])\n\n\nax.register(_run)\n",
        "import atexit, logging, pytest\n\n\ndef _bye():\n    logging.shutdown()\n\n\natexit.register(_bye)\n",
        "from atexit import register\n\n\ndef _w():\n    _x()\n\n\ndef _x():\n    open('f', 'w')\n\n\nregister(_w)\n",
    ],
)
def test_a_process_hook_in_a_non_test_target(hook: str) -> None:
    assert "process-hook" in kinds(FIXED + hook)


def test_harmless_hooks_and_hooks_in_a_function_are_no_finding() -> None:
    harmless = (
        "import atexit\nimport logging\nimport signal\n\n\ndef _flush() -> None:\n"
        "    logging.shutdown()\n\n\natexit.register(_flush)\n\n\ndef main() -> None:\n"
        "    signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    )
    assert kinds(FIXED + harmless) == set()
    before = CALC + "import sys\nsys.excepthook = print\n"
    assert kinds(before.replace("a - b", "a + b"), before) == set()  # there before


@pytest.mark.parametrize(
    "aware",
    [
        'import sys\n\n\ndef add(a: int, b: int) -> int:\n    if "pytest" in sys.modules:\n'
        "        return a + b\n    return a - b\n",
        "import os\n\n\ndef add(a: int, b: int) -> int:\n"
        '    return a + b if os.environ.get("PYTEST_CURRENT_TEST") else a - b\n',
        'import os\nTESTING = "PYTEST_CURRENT_TEST" in os.environ\n' + CALC,
        'import sys\nTESTING = "pytest" in sys.argv[0]\n' + CALC,
        'import sys\nTESTING = sys.modules.get("_py" + "test") is not None\n' + CALC,
        'import sys\nTESTING = "unittest" in sys.modules\n' + CALC,
        'import os\nTESTING = os.getenv("PYTEST_XDIST_WORKER")\n' + CALC,
        'import importlib.util\nTESTING = importlib.util.find_spec("pytest")\n' + CALC,
        "class _N(int):\n    def __eq__(self, other: object) -> bool:\n        return True\n\n"
        "    def __hash__(self) -> int:\n        return 0\n\n\n"
        "def add(a: int, b: int) -> int:\n    return _N(a - b)\n",
        "class _N(int):\n    __eq__ = lambda self, other: True\n\n\n"
        "def add(a: int, b: int) -> int:\n    return _N(a - b)\n",
        "class _N(int):\n    def __ne__(self, other: object) -> bool:\n        return False\n",
        "try:\n    import pytest\n    TESTING = True\nexcept ImportError:\n    TESTING = False\n"
        + CALC,
        "from unittest.mock import ANY\n\n\ndef add(a: int, b: int) -> int:\n    return ANY\n",
        "from unittest import mock\n\n\ndef add(a: int, b: int) -> int:\n    return mock.ANY\n",
    ],
)
def test_code_that_knows_it_runs_under_a_test(aware: str) -> None:
    assert "test-aware" in kinds(aware)


def test_ordinary_equality_and_environment_reads_are_no_finding() -> None:
    ordinary = (
        "import os\nimport sys\n\nDEBUG = os.environ.get('DEBUG')\nWIN = sys.platform == 'win32'\n\n\n"
        "class P:\n    def __init__(self, x: int) -> None:\n        self.x = x\n\n"
        "    def __eq__(self, other: object) -> bool:\n"
        "        return isinstance(other, P) and other.x == self.x\n"
    )
    assert kinds(FIXED + ordinary) == set()
    # a test file may ask about pytest
    assert (
        kinds(TEST + 'import sys\nassert "pytest" in sys.modules\n', TEST, "test_calc.py") == set()
    )


@pytest.mark.parametrize(
    "weak",
    [
        "assert add(1, 2) == 3 or True",
        "assert add(1, 2) == 3 or 1",
        "assert True",
        "assert 1",
        "assert 'add works'",
        'assert (add(1, 2) == 3, "adds")',
        "assert add(1, 2) == add(1, 2)",
        "assert not False",
        "assert True or add(1, 2) == 3",
        "assert add(1, 2) == 3 if False else True",
        "assert isinstance(add(1, 2), object)",
    ],
)
def test_an_assertion_made_vacuous(weak: str) -> None:
    after = TEST.replace("assert add(1, 2) == 3", weak)
    assert "assert-weakened" in kinds(after, TEST, "test_calc.py")


def test_a_vacuous_assertion_added_beside_a_real_one_and_unittest_spellings() -> None:
    added = TEST + "    assert (add(2, 2) == 4, 'msg')\n"
    assert "assert-weakened" in kinds(added, TEST, "test_calc.py")
    case = (
        "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self) -> None:\n        self.assertEqual(add(1, 2), 3)\n"
    )
    for weak in ("self.assertTrue(True)", "self.assertEqual(add(1, 2), add(1, 2))"):
        after = case.replace("self.assertEqual(add(1, 2), 3)", weak)
        assert "assert-weakened" in kinds(after, case, "test_calc.py")


def test_real_assertions_and_old_vacuous_ones_are_no_finding() -> None:
    stronger = TEST.replace(
        "assert add(1, 2) == 3", "assert add(1, 2) == 3\n    assert add(0, 0) == 0"
    )
    assert kinds(stronger, TEST, "test_calc.py") == set()
    old = TEST + "\n\ndef test_smoke() -> None:\n    assert add(1, 1)\n    assert True\n"
    assert kinds(old.replace("(1, 1)", "(2, 1)"), old, "test_calc.py") == set()
    assert kinds("x = 1\nassert True or x\n", "x = 1\n", "calc.py") == set()  # not a test file


TC = (
    "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n\n    def total() -> int: ...\n\n"
    "else:\n\n    def total():\n        return '5'\n"
)


@pytest.mark.parametrize(
    "weakened",
    [
        TC,
        TC.replace("from typing import TYPE_CHECKING", "import typing").replace(
            "if TYPE_CHECKING", "if typing.TYPE_CHECKING"
        ),
        TYPED.replace("def total() -> int:", "def total():"),
        TYPED.replace("def scale(x: int, k: int = 2)", "def scale(x, k: int = 2)"),
        TYPED.replace("def total() -> int:", "def total() -> Any:").replace(
            "def total", "from typing import Any\n\n\ndef total", 1
        ),
        "from typing import Any, cast\n\n\ndef total() -> int:\n    return cast(Any, '5')\n"
        + TYPED[TYPED.index("\n\n\ndef scale") :],
        "import typing\n\n\ndef total() -> int:\n    return typing.cast('Any', '5')\n"
        + TYPED[TYPED.index("\n\n\ndef scale") :],
        TYPED.replace("def scale(x: int, k: int = 2)", "def scale(*args, **kwargs)"),
        "from typing import Any\n\n\n" + TYPED.replace("return '5'", "x: Any = '5'\n    return x"),
        TYPED.replace("return '5'", "return _total()\n\n\ndef _total():\n    return '5'"),
    ],
)
def test_a_weakened_type(weakened: str) -> None:
    assert "type-weakened" in kinds(weakened, TYPED)


def test_type_refactors_are_no_finding() -> None:
    fixed = TYPED.replace("'5'", "5")
    assert kinds(fixed, TYPED) == set()
    renamed = fixed.replace("def total()", "def grand_total()")
    assert kinds(renamed, TYPED) == set()  # renamed, not an annotation removed
    imports = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from decimal import Decimal\n\n\n"
    assert kinds(imports + fixed, TYPED) == set()
    old_untyped = "def total():\n    return '5'\n"
    assert kinds("def total():\n    return 5\n", old_untyped) == set()
    helper = fixed + "\n\ndef _double(x: int) -> int:\n    return 2 * x\n"
    assert kinds(helper, TYPED) == set()  # a typed helper added
    untyped_file = "def total():\n    return '5'\n\n\ndef scale(x, k=2):\n    return x * k\n"
    assert kinds(untyped_file + "\n\ndef more():\n    return 1\n", untyped_file) == set()
    test_file = "def test_a() -> None:\n    assert 1 + 1 == 2\n"
    assert (
        kinds(test_file + "\n\ndef test_b():\n    assert 2 + 2 == 4\n", test_file, "test_x.py")
        == set()
    )
    method = "class C:\n    def f(self) -> int:\n        return 1\n"
    assert "type-weakened" in kinds(method.replace(" -> int", ""), method)
    assert kinds(method.replace("return 1", "return 2"), method) == set()
