"""`incidents capture`: bundles, classification, redaction, dedupe, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from incidents.models import CaptureContext, Incident
from tests.helpers import Cli, Result, run_script

BUNDLE = {"incident.json", "status.txt", "log_tail.txt", "audit_tail.jsonl", "context.json",
          "events.jsonl"}  # fmt: skip


def bundle(root: Root, incident_id: str) -> Path:
    folder = root.inbox / incident_id
    assert folder.is_dir(), f"{incident_id} not in the inbox"
    return folder


def doc(folder: Path, name: str = "incident.json") -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / name).read_text())
    return loaded


def test_capture_writes_a_complete_valid_bundle(cli: Cli, root: Root) -> None:
    r: Result = cli("capture", "--step", "amazon_download", "--message", "Network timeout")
    assert r.code == 0, r.err
    incident_id = r.out.strip()
    assert r.out == incident_id + "\n"  # stdout is only the id
    assert incident_id.startswith("incident_") and "_amazon_download_" in incident_id
    # seed 004's incident_YYYYMMDD_HHMMSS_<slug>, then 48 random bits: two captures of one
    # step in one second must not collide (with 24 bits one in 16 million pairs did)
    stamp, suffix = incident_id[len("incident_") : len("incident_") + 15], incident_id[-13:]
    assert stamp[8] == "_" and (stamp[:8] + stamp[9:]).isdigit()
    assert suffix[0] == "_" and len(suffix[1:]) == 12 and int(suffix[1:], 16) >= 0
    folder = bundle(root, incident_id)
    assert {p.name for p in folder.iterdir()} == BUNDLE
    incident = Incident.model_validate(doc(folder))
    CaptureContext.model_validate(doc(folder, "context.json"))
    assert incident.status == "new" and (folder / "status.txt").read_text() == "new\n"
    assert incident.occurrences == 1
    assert incident.error_signature.startswith(
        f"{incident.failure_class.value} | amazon_download | "
    )
    assert list(root.staging.iterdir()) == []


def test_failure_class_and_error_code_are_classified_when_not_given(cli: Cli, root: Root) -> None:
    r = cli("capture", "--step", "dl", "--message", "Read timed out after 30 seconds")
    d = doc(bundle(root, r.out.strip()))
    assert (d["failure_class"], d["error_code"]) == ("transient", "TIMEOUT")
    r = cli(
        "capture", "--step", "dl", "--message", "boom",
        "--failure-class", "env", "--error-code", "HOOK_FAILURE", "--exit-code", "3",
    )  # fmt: skip
    d = doc(bundle(root, r.out.strip()))
    assert (d["failure_class"], d["error_code"], d["exit_code"]) == ("env", "HOOK_FAILURE", 3)


def test_repeats_share_a_signature_and_fold_into_one_incident(
    cli: Cli, root: Root, tmp_path: Path
) -> None:
    log1, log2 = tmp_path / "a.log", tmp_path / "b.log"
    log1.write_text("first run\n")
    log2.write_text("second run\n")
    a = cli(
        "capture", "--step", "s", "--message", "job 1234 failed after 31s", "--log-file", str(log1)
    )
    b = cli(
        "capture", "--step", "s", "--message", "job 98 failed after 7s", "--log-file", str(log2)
    )
    assert a.out == b.out
    folder = bundle(root, a.out.strip())
    d = doc(folder)
    assert d["occurrences"] == 2 and d["last_seen"] >= d["created_at"]
    log = (folder / "log_tail.txt").read_text()
    assert "first run" in log and "second run" in log and "occurrence 2" in log
    c = cli("capture", "--step", "s", "--message", "job 5 failed after 1s", "--no-dedupe")
    assert c.out != a.out
    other = cli("capture", "--step", "other", "--message", "job 5 failed after 1s")
    assert other.out not in (a.out, c.out)


def test_an_archived_incident_is_not_reopened_by_a_repeat(cli: Cli, root: Root) -> None:
    a = cli("capture", "--step", "s", "--message", "disk full on /dev/sda1").out.strip()
    assert cli("archive", a, "--resolved", "--reason", "cleaned up").code == 0
    b = cli("capture", "--step", "s", "--message", "disk full on /dev/sdb1").out.strip()
    assert a != b and (root.inbox / b).is_dir()


def test_secrets_are_redacted_in_every_file(cli: Cli, root: Root, tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    log = tmp_path / "x.log"
    log.write_text(f"curl -H 'Authorization: Bearer {token}'\npassword=hunter2hunter2\n")
    audit = tmp_path / "audit.jsonl"
    audit.write_text(json.dumps({"event": "login", "password": "s3cr3t-pw"}) + "\n")
    ctx = tmp_path / "ctx.json"
    ctx.write_text(json.dumps({"api_token": token, "note": f"used {token}"}))
    r = cli(
        "capture", "--step", "s", "--message", f"push failed with {token}",
        "--log-file", str(log), "--audit-file", str(audit), "--context-json", str(ctx),
    )  # fmt: skip
    assert r.code == 0, r.err
    folder = bundle(root, r.out.strip())
    for name in BUNDLE:
        text = (folder / name).read_text()
        assert token not in text and "hunter2hunter2" not in text and "s3cr3t-pw" not in text, name
    assert "[REDACTED]" in (folder / "log_tail.txt").read_text()


def test_log_tail_is_bounded_and_invalid_utf8_is_kept(cli: Cli, root: Root, tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes(b"x" * 200_000 + b"\nlast line \xff\xfe end\n")
    r = cli("capture", "--step", "s", "--message", "m", "--log-file", str(log))
    text = (bundle(root, r.out.strip()) / "log_tail.txt").read_text(encoding="utf-8")
    assert len(text.encode()) <= 65536
    assert "last line \\xff\\xfe end" in text


def test_a_private_key_cut_by_the_log_tail_does_not_leak(root: Root, tmp_path: Path) -> None:
    """The 64 KiB tail cut drops the BEGIN line; the key body before END is still redacted."""
    body = [f"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAB{i:08d}" for i in range(40)]
    key = ["-----BEGIN OPENSSH PRIVATE KEY-----", *body, "-----END OPENSSH PRIVATE KEY-----"]
    filler = [f"INFO filler line {i} of the job" for i in range(10_000)]
    after = [f"INFO after the key, line {i:05d} ..........." for i in range(1500)]  # 64.5 KB
    log = tmp_path / "big.log"
    log.write_text("\n".join(filler + key + after) + "\n")
    p = run_script("error_capture.py", "--step", "pk", "--message", "m", "--log-file", str(log))
    assert p.returncode == 0, p.stderr
    text = (bundle(root, p.stdout.strip()) / "log_tail.txt").read_text()
    assert "-----BEGIN OPENSSH" not in text, "the test must cut inside the key"
    assert text.startswith("[REDACTED]-----END OPENSSH PRIVATE KEY-----\nINFO after the key")
    assert not any(line in text for line in body)
    assert text.endswith(after[-1] + "\n")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        # Latin-1 bytes inside the secret: escaped as \xNN only after redaction
        ("latin1.log", b"INFO start\npassword=caf\xe9Secret99\ntoken=\xe9tudiantPW ok\n"),
        # Windows PowerShell 5.1 writes UTF-16 with a BOM
        ("utf16.log", "\ufeffINFO start\r\npassword=caf\xe9Secret99\r\n".encode("utf-16-le")),
        # the tail of a big UTF-16 log: no BOM, cut at an odd byte
        (
            "utf16tail.log",
            b"\x00" + ("x" * 70_000 + "\npassword=caf\xe9Secret99\n").encode("utf-16-le"),
        ),
    ],
)
def test_secrets_in_logs_that_are_not_utf8_are_redacted(root: Root, tmp_path: Path, name: str, data: bytes) -> None:  # fmt: skip
    log = tmp_path / name
    log.write_bytes(data)
    audit = tmp_path / "audit.jsonl"
    audit.write_bytes(b'{"ok": 1}\nraw password=\xe9tudiantPW\n')
    p = run_script("error_capture.py", "--step", "enc", "--message", "m", "--log-file", str(log),
                   "--audit-file", str(audit), "--no-dedupe")  # fmt: skip
    assert p.returncode == 0, p.stderr
    folder = bundle(root, p.stdout.strip())
    text = (folder / "log_tail.txt").read_text(encoding="utf-8")
    assert "password=[REDACTED]" in text, text[-200:]
    assert "Secret99" not in text and "tudiantPW" not in text and "Secret" not in text
    audit_text = (folder / "audit_tail.jsonl").read_text(encoding="utf-8")
    assert "tudiantPW" not in audit_text and "raw password=[REDACTED]" in audit_text


def test_invalid_audit_lines_are_kept_raw(cli: Cli, root: Root, tmp_path: Path) -> None:
    audit = tmp_path / "a.jsonl"
    audit.write_bytes(b'{"ok": 1}\nnot json at all\n[1, 2]\n{"dup": 1, "dup": 2}\n')
    r = cli("capture", "--step", "s", "--message", "m", "--audit-file", str(audit))
    lines = (bundle(root, r.out.strip()) / "audit_tail.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    assert entries[0] == {"ok": 1}
    assert entries[1]["raw"] == "not json at all" and entries[1]["invalid"]
    assert entries[2]["raw"] == "[1, 2]" and "object" in entries[2]["invalid"]
    assert "duplicate" in entries[3]["invalid"]


def test_context_json_from_stdin_is_merged(
    cli: Cli, root: Root, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"ticket": "OPS-1", "year": 2025, "month": 7}'))
    )
    r = cli("capture", "--step", "s", "--message", "m", "--context-json", "-")
    folder = bundle(root, r.out.strip())
    assert doc(folder, "context.json")["ticket"] == "OPS-1"
    d = doc(folder)
    assert (d["year"], d["month"], d["ym"]) == (2025, 7, "2025-07")


def test_targets_and_verification_commands_are_recorded(
    cli: Cli, root: Root, tmp_path: Path
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    r = cli(
        "capture", "--step", "lint", "--message", "ruff failed", "--python-file", "pkg/mod.py",
        "--verify", "python -m pytest -q tests/test_x.py", "--workdir", str(tmp_path),
    )  # fmt: skip
    d = doc(bundle(root, r.out.strip()))
    assert d["python_files"] == ["pkg/mod.py"]
    assert d["verify"] == ["python -m pytest -q tests/test_x.py"]
    assert d["workdir"] == str(tmp_path.resolve())


def test_json_flag_prints_the_incident(cli: Cli, root: Root) -> None:
    r = cli("capture", "--step", "s", "--message", "m", "--json")
    printed = json.loads(r.out)
    assert printed == doc(bundle(root, printed["incident_id"]))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--message", "m"], "--step"),
        (["--step", "s"], "--message"),
        (["--step", "s", "--message", "m", "--context-json", "CTX_NOT_JSON"], "not valid JSON"),
        (["--step", "s", "--message", "m", "--context-json", "CTX_LIST"], "JSON object"),
        (["--step", "s", "--message", "m", "--context-json", "missing.json"], "no such file"),
        (["--step", "s", "--message", "m", "--log-file", "LOG_DIR"], "--log-file"),
        (["--step", "s", "--message", "m", "--log-file", "nope.log"], "--log-file"),
        (["--step", "s", "--message", "m", "--python-file", "/etc/passwd"], "outside the workdir"),
        (["--step", "s", "--message", "m", "--python-file", "absent.py"], "no such file"),
        (["--step", "s", "--message", "m", "--verify", "echo 'unclosed"], "--verify"),
        (["--step", "s", "--message", "m", "--failure-class", "flaky"], "--failure-class"),
        (["--step", "s", "--message", "m", "--exit-code", "x"], "--exit-code"),
        (["--step", "", "--message", "m"], "--step"),
    ],
)
def test_bad_input_is_one_clear_line_exit_2_and_nothing_written(
    cli: Cli, tmp_path: Path, args: list[str], needle: str
) -> None:
    (tmp_path / "CTX_NOT_JSON").write_text("{not json")
    (tmp_path / "CTX_LIST").write_text("[1, 2]")
    (tmp_path / "LOG_DIR").mkdir()
    r = cli("capture", *args)
    assert r.code == 2
    assert r.out == ""
    assert len(r.err.strip().splitlines()) == 1 and needle in r.err, r.err
    assert not (tmp_path / "reports").exists()


def test_a_root_that_is_a_file_is_refused(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "rootfile").write_text("I am a file\n")
    r = cli("capture", "--root", str(tmp_path / "rootfile"), "--step", "s", "--message", "m")
    assert r.code == 2 and "not a directory" in r.err
    assert (tmp_path / "rootfile").read_text() == "I am a file\n"


def test_root_precedence_cli_env_config(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "incidents.toml").write_text('root = "from-config"\n')
    monkeypatch.delenv("INCIDENTS_ROOT")
    r = cli("capture", "--step", "s", "--message", "config root")
    assert (tmp_path / "from-config" / "error_inbox" / r.out.strip()).is_dir()
    monkeypatch.setenv("INCIDENTS_ROOT", str(tmp_path / "from-env"))
    r = cli("capture", "--step", "s", "--message", "env root")
    assert (tmp_path / "from-env" / "error_inbox" / r.out.strip()).is_dir()
    r = cli("capture", "--root", str(tmp_path / "from-cli"), "--step", "s", "--message", "cli")
    assert (tmp_path / "from-cli" / "error_inbox" / r.out.strip()).is_dir()


def test_bad_config_is_a_warning_naming_file_and_key(cli: Cli, root: Root, tmp_path: Path) -> None:
    (tmp_path / "incidents.toml").write_text("[capture]\nlog_tail_bytes = 'big'\n")
    r = cli("capture", "--step", "s", "--message", "m")
    assert r.code == 0 and "incidents.toml: capture.log_tail_bytes" in r.err
    assert bundle(root, r.out.strip()).is_dir()


def test_the_capture_path_imports_no_heavy_dependency(tmp_path: Path) -> None:
    """typer, pydantic, jsonschema, sqlite3 and friends stay off the capture path."""
    import subprocess
    import sys

    from tests.helpers import SCRIPTS

    env = {**__import__("os").environ, "INCIDENTS_ROOT": str(tmp_path / "reports")}
    p = subprocess.run(
        [sys.executable, "-X", "importtime", str(SCRIPTS / "error_capture.py"),
         "--step", "s", "--message", "m"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if "|" in line}
    heavy = {"typer", "pydantic", "jsonschema", "sqlite3", "click", "rich", "watchdog",
             "filelock", "typing", "dataclasses", "subprocess", "hashlib", "mcp", "anyio",
             "starlette", "uvicorn", "incidents.serve", "incidents.commands.serve"}  # fmt: skip
    assert imported & heavy == set()
    # issue 16 (capture at most 1.3x the floor): each of these cost 0.3-3 ms of a ~30 ms
    # capture; paths are strings on this path, the rest of the vocabulary and the
    # config's whole-file check are not needed when there is no incidents.toml
    slow = {"pathlib", "urllib.parse", "contextlib", "importlib", "shlex", "argparse",
            "incidents.vocab", "incidents.output", "incidents.config_check",
            # a verdict holds its code and class as strings; a text alone needs no exit
            # code table; a merge's hint is one stat; no rule is compiled for "m"
            "incidents.codes", "incidents.rules", "incidents.rules.network"}  # fmt: skip
    assert imported & slow == set()


def test_a_new_bundle_imports_no_grouping_until_a_merge_exists(root: Root) -> None:
    """--no-dedupe opens a bundle without the group index: whether a merge sent its
    signature elsewhere is one stat of `.state/groups` until a merge made it."""
    import subprocess
    import sys

    from tests.helpers import SCRIPTS

    argv = [sys.executable, "-X", "importtime", str(SCRIPTS / "error_capture.py"),
            "--step", "s", "--message", "connection reset by peer", "--no-dedupe"]  # fmt: skip
    env = {**os.environ, "INCIDENTS_ROOT": str(root.path)}
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if "|" in line}
    assert "incidents.classify" in imported
    assert imported & {"incidents.grouping", "incidents.capture_fold", "incidents.locks"} == set()
    os.makedirs(root.path / ".state" / "groups")
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "incidents.grouping" in p.stderr


@pytest.mark.parametrize("hostile", ["symlink", "hard_link", "fifo"])
def test_a_repeat_never_folds_into_a_bundle_whose_log_tail_breaks_the_rules(
    cli: Cli, root: Root, tmp_path: Path, hostile: str
) -> None:
    """Issue 15: folding a repeat followed a log_tail.txt symlink and copied the file it
    pointed at into the bundle. The open bundle's files go through the same door as at
    pickup (`bundle_files`): one that breaks it is left for the pickup to set aside, and
    the repeat opens an incident of its own."""
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the root: never read into it\n")
    log = tmp_path / "a.log"
    log.write_text("run\n")
    a = cli("capture", "--step", "s", "--message", "job 1 failed", "--log-file", str(log))
    folder = bundle(root, a.out.strip())
    (folder / "log_tail.txt").unlink()
    if hostile == "symlink":
        (folder / "log_tail.txt").symlink_to(outside)
    elif hostile == "hard_link":
        os.link(outside, folder / "log_tail.txt")
    else:
        os.mkfifo(folder / "log_tail.txt")
    b = cli("capture", "--step", "s", "--message", "job 2 failed", "--log-file", str(log))
    assert b.code == 0, b.err
    assert b.out != a.out, "folded into a bundle that breaks the bundle-file rules"
    assert doc(folder)["occurrences"] == 1
    assert outside.read_text() == "outside the root: never read into it\n"
    for path in root.path.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_nlink == 1:
            assert b"never read into it" not in path.read_bytes(), path


def test_a_context_json_at_its_input_cap_makes_a_bundle_within_the_bundle_cap(
    cli: Cli, root: Root, tmp_path: Path
) -> None:
    """1 MiB of compact --context-json, indented, was a 3.5 MB context.json: a bundle that
    capture wrote and the step service would set aside for breaking the 1 MiB cap."""
    source = tmp_path / "ctx.json"
    source.write_text(json.dumps({"ids": [1] * 499_990}, separators=(",", ":")))
    assert source.stat().st_size <= 1 << 20
    r = cli("capture", "--step", "s", "--message", "boom", "--context-json", str(source))
    assert r.code == 0, r.err
    folder = bundle(root, r.out.strip())
    assert (folder / "context.json").stat().st_size <= 1 << 20
    assert doc(folder, "context.json")["ids"] == [1] * 499_990
    from incidents.bundle_files import problems

    assert problems(folder) == []


def test_an_audit_tail_is_kept_within_its_bundle_cap(cli: Cli, root: Root, tmp_path: Path) -> None:
    """[capture] audit_tail_lines allows 100,000 lines of up to 4 KiB: more than the 16 MiB
    audit_tail.jsonl may hold in a bundle. The oldest lines give way."""
    (tmp_path / "incidents.toml").write_text("[capture]\naudit_tail_lines = 100000\n")
    audit = tmp_path / "audit.jsonl"
    line = json.dumps({"event": "step", "detail": "x" * 3000}) + "\n"
    audit.write_text(line * 7000)  # 21 MB
    r = cli("capture", "--step", "s", "--message", "boom", "--audit-file", str(audit))
    assert r.code == 0, r.err
    folder = bundle(root, r.out.strip())
    size = (folder / "audit_tail.jsonl").stat().st_size
    assert (16 << 20) - len(line) < size <= 16 << 20
    from incidents.bundle_files import problems

    assert problems(folder) == []


def test_a_workdir_that_may_not_be_looked_into_is_a_usage_error(cli: Cli) -> None:
    """`/proc/1/root/etc` (another process's root: permission denied even to look): one
    line, exit 2, no crash log."""
    r = cli("capture", "--step", "s", "--message", "m", "--workdir", "/proc/1/root/etc")
    if r.code == 0:
        pytest.skip("this process may look into /proc/1/root")
    assert r.code == 2 and "internal error" not in r.err, r.err
    assert r.err.startswith("incidents: --workdir /proc/1/root/etc:"), r.err
