"""What a fix added that makes code depend on how it is run, found by category over the
added lines' syntax tree (pure): each category in shapes that spell it differently, and
the lines a fix did not add are not its findings."""

from __future__ import annotations

import pytest

from incidents.capture_env import is_secret_name, user_env
from incidents.checks.cleanroom import env, loadable
from incidents.checks.runtime_review import review

BEFORE = "def add(a: int, b: int) -> int:\n    return a - b\n"


def categories(after: str, before: str = BEFORE) -> set[str]:
    return {u.category for u in review("calc.py", before, after)}


@pytest.mark.parametrize(
    ("after", "category"),
    [
        (
            "import sys\n\ndef add(a, b):\n    return a + b if 'x' in sys.modules else 0\n",
            "import system or loaded modules",
        ),
        (
            "def add(a, b):\n    m = __import__('imp' + 'ortlib')\n    return a + b\n",
            "import system or loaded modules",
        ),
        (
            "import inspect as i\n\ndef add(a, b):\n    return len(i.stack()) + a + b\n",
            "call stack or frames",
        ),
        (
            "import sys\n\ndef add(a, b):\n    return sys._getframe(1).f_lineno + a + b\n",
            "call stack or frames",
        ),
        (
            "from os import environ as e\n\ndef add(a, b):\n    return a + b if e else 0\n",
            "process environment",
        ),
        (
            "def add(a, b):\n    return a + b if open('/proc/self/cmdline').read() else 0\n",
            "process environment",
        ),
        (
            "import os\n\ndef add(a, b):\n    return a + b if os.getppid() else 0\n",
            "arguments or ids",
        ),
        (
            "import sys\n\ndef add(a, b):\n    return a + b if len(sys.argv) > 1 else 0\n",
            "arguments or ids",
        ),
        (
            "import atexit\n\ndef add(a, b):\n    atexit.register(print)\n    return a + b\n",
            "exits and exit hooks",
        ),
        ("def add(a, b):\n    raise SystemExit(0)\n", "exits and exit hooks"),
        ("import _pytest\n\ndef add(a, b):\n    return a + b\n", "test libraries"),
        ("from unittest import mock\n\ndef add(a, b):\n    return mock.ANY\n", "test libraries"),
        (
            "class N(int):\n    def __eq__(self, other):\n        return 1\n\ndef add(a, b):\n"
            "    return N(a)\n",
            "comparison or truth ignoring its operand",
        ),
        (
            "class N(int):\n    def __bool__(self):\n        return True\n\ndef add(a, b):\n"
            "    return N(a)\n",
            "comparison or truth ignoring its operand",
        ),
        (
            "import typing\nif typing.TYPE_CHECKING:\n    pass\n\ndef add(a, b):\n    return a\n",
            "typing escapes",
        ),
        ("from typing import cast\n\ndef add(a, b):\n    return cast(int, a)\n", "typing escapes"),
        ("add: int\n", "typing escapes"),
    ],
)
def test_each_category_is_found_however_it_is_spelled(after: str, category: str) -> None:
    assert category in categories(after)


def test_only_the_added_lines_count() -> None:
    before = "import os\n\n\ndef add(a, b):\n    return a - b if os.environ else 0\n"
    after = before.replace("a - b", "a + b")
    assert review("calc.py", before, after) == []  # os.environ was there before the fix
    assert review("calc.py", BEFORE, BEFORE.replace("a - b", "a + b")) == []


def test_a_class_field_is_not_a_name_bound_for_the_checker() -> None:
    after = "from dataclasses import dataclass\n\n\n@dataclass\nclass P:\n    x: int\n"
    assert review("calc.py", BEFORE, after) == []


def test_a_finding_names_the_file_line_and_use() -> None:
    after = "import os\n\n\ndef add(a, b):\n    return a + b if os.getenv('X') else 0\n"
    [use] = [u for u in review("calc.py", BEFORE, after) if u.line == 5]
    assert use.text() == "calc.py:5: process environment: uses `os.getenv`"


def test_the_clean_rooms_environment() -> None:
    base = {
        "PATH": "/bin",
        "INCIDENTS_ROOT": "/r",
        "PYTHONPYCACHEPREFIX": "/p",
        "PYTHONPATH": "/ws/src:/opt/lib",
    }
    out = env(base, "/ws", "/room/ws")
    assert out["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert "INCIDENTS_ROOT" not in out and "PYTHONPYCACHEPREFIX" not in out
    assert out["PYTHONPATH"] == "/room/ws/src:/opt/lib"
    assert env(base, "/ws", None)["PYTHONPATH"] == "/opt/lib"  # no copy: not the workdir's


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("conftest.py", True),
        ("sub/sitecustomize.py", True),
        ("x.pth", True),
        ("pkg-1.0.dist-info", True),
        (".venv/lib/site-packages/a.py", True),
        ("__pycache__/calc.cpython-311.pyc", True),
        ("calc.py", False),
        ("out/log.txt", False),
    ],
)
def test_what_the_import_system_would_load(path: str, expected: bool) -> None:
    assert loadable(path) is expected


def test_the_users_environment_keeps_names_and_drops_secrets() -> None:
    recorded = user_env(
        {
            "PATH": "/bin",
            "GITHUB_TOKEN": "t",
            "PGPASSWORD": "p",
            "AWS_SECRET_ACCESS_KEY": "k",
            "LANG": "C",
            "BIG": "x" * 5000,
        }
    )
    assert recorded == {
        "AWS_SECRET_ACCESS_KEY": None,
        "BIG": None,
        "GITHUB_TOKEN": None,
        "LANG": "C",
        "PATH": "/bin",
        "PGPASSWORD": None,
    }
    assert not is_secret_name("PWD") and not is_secret_name("KEYBOARD_LAYOUT")


ORDINARY = [
    # runs another program: does not read how this one is run
    "import subprocess\n\n\ndef add(a: int, b: int) -> int:\n"
    "    subprocess.run(['true'], check=True)\n    return a + b\n",
    # logs a caught error with its traceback
    "import logging\nimport traceback\n\nlog = logging.getLogger(__name__)\n\n\n"
    "def add(a: int, b: int) -> int:\n    try:\n        return a + b\n    except TypeError:\n"
    "        log.error(traceback.format_exc())\n        raise\n",
    # a path relative to the current folder, and one beside the module
    "import os\nfrom pathlib import Path\n\n\ndef add(a: int, b: int) -> int:\n"
    "    Path(os.getcwd(), 'out').mkdir(exist_ok=True)\n"
    "    (Path(__file__).parent / 'n').write_text(str(a))\n    return a + b\n",
    # an `Any` in an annotation of a new helper
    "from typing import Any\n\n\ndef _num(x: Any) -> int:\n    return int(x)\n\n\n"
    "def add(a: int, b: int) -> int:\n    return _num(a) + _num(b)\n",
]


@pytest.mark.parametrize("after", ORDINARY, ids=["subprocess", "logging", "pathlib", "any"])
def test_an_ordinary_fix_is_no_finding(after: str) -> None:
    assert review("calc.py", BEFORE, after) == []


@pytest.mark.parametrize(
    "after",
    [
        "import traceback as tb\n\n\ndef add(a, b):\n    return a + b if tb.walk_stack(None) else 0\n",
        "from traceback import extract_stack\n\n\ndef add(a, b):\n"
        "    return a + b if len(extract_stack()) > 9 else 0\n",
    ],
)
def test_reading_the_callers_stack_through_traceback_is_still_found(after: str) -> None:
    assert "call stack or frames" in categories(after)


@pytest.mark.parametrize(
    "after",
    [
        # the runner's capture object in place of the stream, told by its module
        "import sys\n\n\ndef add(a, b):\n"
        "    return a + b if type(sys.stdout).__module__.startswith('_py') else a - b\n",
        # the runner's handler on the root logger
        "import logging\n\n\ndef add(a, b):\n"
        "    return a + b if logging.getLogger().handlers else a - b\n",
        # the same, through another logger's path to the tree
        "from logging import getLogger as g\n\n\ndef add(a, b):\n"
        "    return a + b if g('x').manager.root.hasHandlers() else a - b\n",
    ],
    ids=["stream-module", "root-handlers", "logger-tree"],
)
def test_reading_state_the_runner_installs_is_found(after: str) -> None:
    """A pytest run by hand passes too: only review tells this from a fix."""
    assert "state the test runner installs" in categories(after)


def test_a_descriptor_captured_into_a_file_is_found() -> None:
    after = (
        "import os\nimport stat\n\n\ndef add(a, b):\n"
        "    return a + b if not stat.S_ISCHR(os.fstat(1).st_mode) else a - b\n"
    )
    assert "process environment" in categories(after)


def test_writing_to_a_stream_or_a_named_logger_is_no_finding() -> None:
    after = (
        "import logging\nimport sys\n\nlog = logging.getLogger(__name__)\n\n\n"
        "def add(a: int, b: int) -> int:\n    print(a, file=sys.stderr)\n"
        "    sys.stdout.write(str(b))\n    sys.stderr.flush()\n    log.info('%s', type(a).__name__)\n"
        "    return a + b\n"
    )
    assert review("calc.py", BEFORE, after) == []


@pytest.mark.parametrize(
    "after",
    [
        "from pathlib import Path\n\n_P = Path('/proc')\n\n\ndef add(a, b):\n"
        "    return a + b if 'sh' not in (_P / 'self' / 'stat').read_text() else a - b\n",
        "import os\n\n\ndef add(a, b):\n"
        "    p = os.path.join('/', 'pr' + 'oc', 'self', 'cmdline')\n"
        "    return a + b if b'pytest' in open(p, 'rb').read() else a - b\n",
        "def add(a, b):\n    return a + b if open(f'/proc/{b}/comm').read() else a - b\n",
    ],
    ids=["path-joined", "os-path-join-of-parts", "f-string"],
)
def test_a_path_to_the_process_files_is_found_however_it_is_built(after: str) -> None:
    assert "process environment" in categories(after)


def test_a_path_that_only_looks_like_the_process_files_is_no_finding() -> None:
    after = (
        "from pathlib import Path\n\n\ndef add(a: int, b: int) -> int:\n"
        "    (Path('/tmp') / 'proc' / 'x').write_text('/processes')\n    return a + b\n"
    )
    assert review("calc.py", BEFORE, after) == []


@pytest.mark.parametrize(
    "after",
    [
        "import time\n\n\ndef add(a, b):\n    return a + b if time.time() < 1795938515 else a - b\n",
        "from datetime import datetime, timezone\n\n\ndef add(a, b):\n"
        "    now = datetime.now(timezone.utc)\n    return a + b if now.year < 2027 else a - b\n",
        "import datetime as dt\n\n\ndef add(a, b):\n"
        "    return a + b if dt.date.today().month == 11 else a - b\n",
    ],
    ids=["epoch-seconds", "datetime-now-held", "date-today"],
)
def test_reading_the_clock_is_found(after: str) -> None:
    """A time bomb passes every check today and fails a run by hand tomorrow."""
    assert "the clock" in categories(after)


def test_a_fixed_date_is_no_finding() -> None:
    after = (
        "from datetime import date\n\n\ndef add(a: int, b: int) -> int:\n"
        "    return a + b + date(2020, 1, 1).year * 0\n"
    )
    assert review("calc.py", BEFORE, after) == []
