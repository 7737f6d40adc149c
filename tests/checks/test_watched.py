"""What else `incidents check` watches besides its targets, with real tools and real
`incidents` processes: config files beside and above them, source trees outside the
working directory or hidden in it, the files around pytest's tests, the environment and
the installed packages. Each case changes one of them, which changes the tool's own
verdict: the next check must report that verdict (the replay refuses, and the engine's
cache key differs), and the one after must replay it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.checks.test_replay import check, write

Env = dict[str, str | None]


def project(cwd: Path, cache: Path, files: dict[str, str]) -> Path:
    write(cwd, {"incidents.toml": f'[checks]\ncache_dir = "{cache}"\n', **files})
    return cwd


def flips(
    cwd: Path, args: Sequence[str], before: int, after: int, change: Callable[[], object] = str,
    *, env: Env | None = None, env_after: Env | None = None, python: str = sys.executable,
) -> None:  # fmt: skip
    """Exit `before`, replayed while nothing changes; after `change` (and with `env_after`
    as the environment), exit `after` from the tools, then replayed."""

    def run() -> tuple[int, bool]:
        res = check(cwd, *args, env=env, python=python)
        return res.code, res.replayed

    assert run() == (before, False)
    assert run() == (before, True)
    change()
    env = env_after if env_after is not None else env
    assert run() == (after, False)
    assert run() == (after, True)


UNDEFINED = "print(undefined_name)\n"  # F821: hard, whatever strict_mode says
UNTYPED = "def f(x):\n    return x\n"
IGNORE_F821 = '[lint]\nignore = ["F821"]\n'


# 1. config files beside a target, below cwd


def test_a_ruff_config_in_a_targets_folder(tmp_path: Path, shared_cache: Path) -> None:
    tree = project(tmp_path / "tree", shared_cache, {
        "pkg/ruff.toml": IGNORE_F821, "pkg/a.py": UNDEFINED,
    })  # fmt: skip
    flips(tree, ["pkg/a.py", "--tools", "ruff"], 0, 1, (tree / "pkg/ruff.toml").unlink)


# 2. a higher config file behind the nearest one, which lacks the tool's section


@pytest.mark.parametrize(
    ("tool", "target", "section"),
    [
        ("ruff", UNDEFINED, '[tool.ruff.lint]\nignore = ["F821"]\n'),
        ("mypy", UNTYPED, "[tool.mypy]\ndisallow_untyped_defs = false\n"),
    ],
)
def test_the_repo_roots_pyproject_behind_a_subprojects(
    tmp_path: Path, shared_cache: Path, tool: str, target: str, section: str
) -> None:
    repo = tmp_path / "repo"
    write(repo, {"pyproject.toml": section, ".git/HEAD": ""})
    sub = project(repo / "sub", shared_cache, {
        "pyproject.toml": '[project]\nname = "sub"\nversion = "0"\n', "a.py": target,
    })  # fmt: skip
    stricter = {"ruff": "[tool.ruff.lint]\n", "mypy": "[tool.mypy]\ndisallow_untyped_defs = true\n"}
    flips(
        sub,
        ["a.py", "--tools", tool],
        0,
        1,
        lambda: write(repo, {"pyproject.toml": stricter[tool]}),
    )


# 3. modules mypy imports from outside cwd, or from a hidden folder in it


@pytest.mark.parametrize(("cwd", "folder"), [("app", "../lib"), (".", ".ci")])
def test_modules_imported_beside_a_target_outside_cwd_or_hidden(
    tmp_path: Path, shared_cache: Path, cwd: str, folder: str
) -> None:
    tree = project(tmp_path / "tree" / cwd, shared_cache, {
        f"{folder}/run.py": "from helper import g\n\nx: int = g()\n",
        f"{folder}/helper.py": "def g() -> int:\n    return 1\n",
    })  # fmt: skip
    to_str = {f"{folder}/helper.py": "def g() -> str:\n    return '1'\n"}
    flips(tree, [f"{folder}/run.py", "--tools", "mypy"], 0, 1, lambda: write(tree, to_str))


def test_a_sibling_package_when_cwd_is_inside_a_package(tmp_path: Path, shared_cache: Path) -> None:
    """cwd is `proj/pkg` (a package): mypy resolves imports from `proj`, so a sibling
    package there is read although it is outside cwd."""
    proj = tmp_path / "proj"
    write(proj, {"sib/__init__.py": "def f() -> int:\n    return 1\n"})
    pkg = project(proj / "pkg", shared_cache, {
        "__init__.py": "", "mod.py": "from sib import f\n\nx: int = f()\n",
    })  # fmt: skip
    to_str = {"sib/__init__.py": "def f() -> str:\n    return 'a'\n"}
    flips(pkg, ["mod.py", "--tools", "mypy"], 0, 1, lambda: write(proj, to_str))


def test_a_symlinked_folder_is_followed(tmp_path: Path, shared_cache: Path) -> None:
    ext = tmp_path / "ext"
    write(ext, {"lib/__init__.py": "def f() -> int:\n    return 1\n"})
    tree = project(tmp_path / "proj", shared_cache, {
        "test_mod.py": "from lib import f\n\nx: int = f()\n\n\ndef test_f() -> None:\n"
                       "    assert f() == 1\n",
    })  # fmt: skip
    (tree / "lib").symlink_to(ext / "lib")
    to_str = {"lib/__init__.py": "def f() -> str:\n    return 'a'\n"}
    flips(tree, ["test_mod.py", "--tools", "mypy,pytest"], 0, 1, lambda: write(ext, to_str))


# 4. pytest's inifile and conftest.py files above cwd, and an inifile between cwd and tests

XPASS = "import pytest\n\n\n@pytest.mark.xfail\ndef test_x() -> None:\n    pass\n"
STRICT = "[pytest]\nxfail_strict = true\n"


def test_pytest_files_at_a_repo_root_above_cwd(tmp_path: Path, shared_cache: Path) -> None:
    """The subproject's own pyproject.toml (no pytest section) and conftest.py are nearer;
    pytest still reads the root's settings and loads its conftest.py."""
    repo = tmp_path / "repo"
    write(repo, {
        "pyproject.toml": "[tool.pytest.ini_options]\n",
        "conftest.py": "import pytest\n\n\n@pytest.fixture\ndef n() -> int:\n    return 3\n",
    })  # fmt: skip
    proj = project(repo / "proj", shared_cache, {
        "pyproject.toml": '[project]\nname = "proj"\nversion = "0"\n', "conftest.py": "",
        "tests/test_n.py": "def test_n(n: int) -> None:\n    assert n == 3\n",
        "tests/test_x.py": XPASS,
    })  # fmt: skip
    args = ["tests", "--tools", "pytest"]
    root_conftest = repo / "conftest.py"
    flips(
        proj,
        args,
        0,
        1,
        lambda: write(repo, {"conftest.py": root_conftest.read_text().replace("3", "4")}),
    )
    write(repo, {"conftest.py": root_conftest.read_text().replace("4", "3")})
    strict = "[tool.pytest.ini_options]\nxfail_strict = true\n"
    flips(proj, args, 0, 1, lambda: write(repo, {"pyproject.toml": strict}))


def test_a_pytest_ini_between_cwd_and_the_tests(tmp_path: Path, shared_cache: Path) -> None:
    tree = project(tmp_path / "tree", shared_cache, {
        "tests/pytest.ini": "[pytest]\n", "tests/unit/test_x.py": XPASS,
    })  # fmt: skip
    args = ["tests/unit/test_x.py", "--tools", "pytest"]
    flips(tree, args, 0, 1, lambda: write(tree, {"tests/pytest.ini": STRICT}))


# 5. what is not Python: data files, the environment, the installed packages


def test_a_data_file_a_test_reads(tmp_path: Path, shared_cache: Path) -> None:
    tree = project(tmp_path / "tree", shared_cache, {
        "tests/expected.txt": "3",
        "tests/test_data.py": "from pathlib import Path\n\n\ndef test_data() -> None:\n"
                              "    assert Path(__file__).with_name('expected.txt').read_text() == '3'\n",
    })  # fmt: skip
    flips(tree, ["tests/test_data.py", "--tools", "pytest"], 0, 1,
          lambda: write(tree, {"tests/expected.txt": "4"}))  # fmt: skip


ENVIRONMENT = [
    # (tool, target, variable, its value while clean, then)
    # (deselecting every test is no longer clean: a selected file must yield a test)
    ("pytest", "test_xfail.py", "PYTEST_ADDOPTS", "-q", "--runxfail"),
    ("pytest", "test_value.py", "PYTHONPATH", "good", "bad"),
    ("mypy", "use.py", "MYPYPATH", "good", "bad"),
]


@pytest.mark.parametrize(("tool", "target", "name", "clean", "dirty"), ENVIRONMENT)
def test_the_environment_the_tools_read(
    tmp_path: Path, shared_cache: Path, tool: str, target: str, name: str, clean: str,
    dirty: str | None,
) -> None:  # fmt: skip
    tree = project(tmp_path / "tree", shared_cache, {
        "good/value.py": "N = 3\n", "bad/value.py": "N = 4\n",
        "good/value.pyi": "N: int\n", "bad/value.pyi": "N: str\n",
        "test_value.py": "from value import N\n\n\ndef test_n() -> None:\n    assert N == 3\n",
        "test_xfail.py": "import pytest\n\n\n@pytest.mark.xfail\n"
                         "def test_fail() -> None:\n    assert False\n",
        "use.py": "from value import N\n\nx: int = N\n",
    })  # fmt: skip
    flips(tree, [target, "--tools", tool], 0, 1, env={name: clean}, env_after={name: dirty})


def test_uninstalling_a_stub_package_reruns_mypy(tmp_path: Path, shared_cache: Path) -> None:
    """A venv of its own (our packages through a .pth file), where "pip uninstall" is the
    removal of an installed package's folders, as pip does it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip())  # fmt: skip
    ours = sysconfig.get_paths()["purelib"]
    write(site, {
        "ours.pth": f"import site; site.addsitedir({ours!r})\n",
        "yaml-stubs/__init__.pyi": "def safe_load(stream: str) -> object: ...\n",
        "types_PyYAML-6.0.dist-info/METADATA": "Name: types-PyYAML\nVersion: 6.0\n",
    })  # fmt: skip
    mypy = venv / "bin" / "mypy"
    mypy.write_text(f"#!{python}\nimport sys\nfrom mypy.__main__ import console_entry\n"
                    "sys.exit(console_entry())\n")  # fmt: skip
    mypy.chmod(0o755)
    tree = project(tmp_path / "tree", shared_cache, {
        "load.py": "import yaml\n\nx = yaml.safe_load('a: 1')\n",
    })  # fmt: skip

    def uninstall() -> None:
        for folder in ("yaml-stubs", "types_PyYAML-6.0.dist-info"):
            shutil.rmtree(site / folder)

    flips(tree, ["load.py", "--tools", "mypy"], 0, 1, uninstall, python=python)
