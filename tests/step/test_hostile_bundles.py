"""A hostile-bundle corpus (issue 15, deliver 1): bundles written by hand into a real inbox
that break the bundle-file rules (`incidents.bundle_files`). Each is picked up by a real
`incidents drive` and must be set aside in `error_rejected/` within that one pass, with a
reason naming the file and the rule: never resolved, no traceback, no hang, nothing
deleted, nothing outside the root read into it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.bundles import drop, rejected_reason
from tests.helpers import FAST, TIERS_OFF, Cli, use_config

SECRET = "outside the root: must never be read into it\n"
Make = Callable[[Path, Path], None]  # (bundle folder, a file outside the root)


def _symlink(name: str) -> Make:
    def make(folder: Path, outside: Path) -> None:
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(outside)

    return make


def _sized(name: str, size: int) -> Make:
    def make(folder: Path, outside: Path) -> None:
        with open(folder / name, "wb") as fh:
            fh.truncate(size)  # sparse: no disk used

    return make


def _content(name: str, data: bytes) -> Make:
    def make(folder: Path, outside: Path) -> None:
        (folder / name).write_bytes(data)

    return make


def _fifo(folder: Path, outside: Path) -> None:
    os.mkfifo(folder / "log_tail.txt")


def _hard_link(folder: Path, outside: Path) -> None:
    os.link(outside, folder / "log_tail.txt")


def _newline_link(folder: Path, outside: Path) -> None:
    (folder / "notes\nreason.txt").symlink_to(outside)


def _incident_folder(folder: Path, outside: Path) -> None:
    (folder / "incident.json").unlink()
    (folder / "incident.json").mkdir()
    (folder / "incident.json" / "x").write_text("{}")


def _invalid_state(folder: Path, outside: Path) -> None:
    (folder / "state.json").write_text('{"current_state": "S_SUCCESS", ')


def _random_audit(folder: Path, outside: Path) -> None:
    (folder / "audit_tail.jsonl").write_bytes(bytes(range(256)) * 40 + b"\n\xff\xfe\n\x80")


def _link_in_subfolder(folder: Path, outside: Path) -> None:
    (folder / "extra").mkdir()
    (folder / "extra" / "log.txt").symlink_to(outside)


CORPUS: dict[str, tuple[Make, str]] = {
    "status_symlink": (_symlink("status.txt"), "status.txt: is a symbolic link"),
    "status_20mb": (_sized("status.txt", 20 << 20), "status.txt: is 20971520 bytes, over its cap of 64"),
    "state_invalid": (_invalid_state, "state.json:"),
    "log_fifo": (_fifo, "log_tail.txt: is a FIFO"),
    "log_symlink": (_symlink("log_tail.txt"), "log_tail.txt: is a symbolic link"),
    "context_symlink": (_symlink("context.json"), "context.json: is a symbolic link"),
    "log_sparse_4gib": (_sized("log_tail.txt", 4 << 30), "log_tail.txt: is 4294967296 bytes, over its cap of 16777216"),
    "context_40mb": (_sized("context.json", 40 << 20), "context.json: is 41943040 bytes, over its cap of 1048576"),
    "context_array": (_content("context.json", b"[1, 2]\n"), "context.json: must be a JSON object, not list"),
    "audit_random": (_random_audit, "audit_tail.jsonl: 43 of 43 lines are not UTF-8 JSON objects"),
    "hard_link": (_hard_link, "log_tail.txt: has 2 hard links"),
    "newline_name": (_newline_link, "'notes\\nreason.txt': is a symbolic link"),
    "incident_folder": (_incident_folder, "incident.json: is a folder (a file is expected)"),
    "subfolder_link": (_link_in_subfolder, "extra/log.txt: is a symbolic link"),
    "decisions_object": (_content("decisions.json", b"{}"), "decisions.json: must be a JSON array, not dict"),
    "events_12mb": (_sized("events.jsonl", 12 << 20), "events.jsonl: is 12582912 bytes, over its cap of 9437184"),
    "incident_array": (_content("incident.json", b"[1, 2]\n"), "incident.json"),
}  # fmt: skip


def _names(folder: Path) -> set[str]:
    return {
        str(Path(d, n).relative_to(folder))
        for d, dirs, files in os.walk(folder)
        for n in dirs + files
    }


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    return ws, outside


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", sorted(CORPUS))
def test_a_hostile_bundle_is_set_aside_in_one_pass_naming_file_and_rule(
    cli: Cli, root: Root, setup: tuple[Path, Path], case: str
) -> None:
    ws, outside = setup
    make, reason = CORPUS[case]
    folder = drop(root, case.replace("_", ""), ws)
    make(folder, outside)
    before = _names(folder)
    r = cli("drive", folder.name)
    assert r.code in (1, 2), r.err
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    assert "error_rejected" in r.err, r.err
    text = rejected_reason(root, folder.name)  # nowhere else: not resolved, not in the inbox
    assert reason in text, text
    assert text.count("\n") == 1, "reason.txt is one line, whatever the names hold"
    kept = root.rejected / folder.name
    assert _names(kept) - {"reason.txt"} == before, "something of the bundle was lost"
    assert outside.read_text() == SECRET
    for path in root.path.rglob("*"):
        small = path.is_file() and path.stat().st_size < (1 << 20)
        if small and not path.is_symlink() and path.stat().st_nlink == 1:  # not the hard link
            assert SECRET.encode() not in path.read_bytes(), f"{path} copied the outside file"


def test_a_clean_bundle_is_worked_not_rejected(
    cli: Cli, root: Root, setup: tuple[Path, Path]
) -> None:
    """The control: the same hand-written bundle, with well-formed files, is worked."""
    ws, _ = setup
    folder = drop(root, "clean", ws)
    (folder / "log_tail.txt").write_text("ruff failed\n")
    (folder / "context.json").write_text('{"ci": true}\n')
    (folder / "audit_tail.jsonl").write_text('{"a": 1}\n{"raw": "x", "invalid": "not JSON"}\n')
    r = cli("drive", folder.name)
    assert "error_rejected" not in r.err, r.err
    assert not (root.rejected / folder.name).exists()


def test_audit_lines_that_do_not_decode_are_tolerated_up_to_a_tenth(
    cli: Cli, root: Root, setup: tuple[Path, Path]
) -> None:
    ws, _ = setup
    folder = drop(root, "audit", ws)
    (folder / "audit_tail.jsonl").write_bytes(b'{"a": 1}\n' * 19 + b"\xff\xfe\n")
    r = cli("drive", folder.name)
    assert "error_rejected" not in r.err, r.err


def test_the_read_after_the_listing_never_follows_what_replaced_the_file(
    tmp_path: Path,
) -> None:
    """The deterministic half of the race below: whatever the listing saw, the read itself
    opens without following a link and takes only a regular file under its cap, so a file
    swapped for a link, a FIFO or a larger file between the two is refused, not read."""
    from incidents import bundle_files
    from incidents.errors import UnsafeFile

    folder = tmp_path / "b"
    folder.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    log = folder / "log_tail.txt"
    log.write_text("ruff failed\n")
    assert bundle_files.listing_problems(folder) == []  # the listing: all well
    log.unlink()
    log.symlink_to(outside)  # ... then swapped before the read
    with pytest.raises(UnsafeFile, match="symbolic link"):
        bundle_files.read(folder, "log_tail.txt")
    log.unlink()
    os.mkfifo(log)  # a FIFO would block a plain open for ever
    with pytest.raises(UnsafeFile):
        bundle_files.read(folder, "log_tail.txt")
    log.unlink()
    with open(log, "wb") as fh:
        fh.truncate(bundle_files.LOG_MAX_BYTES + 1)
    with pytest.raises(UnsafeFile, match="cap"):
        bundle_files.read(folder, "log_tail.txt")


@pytest.mark.timeout(120)
def test_a_bundle_that_changes_while_it_is_read_never_reads_outside_and_never_crashes(
    cli: Cli, root: Root, setup: tuple[Path, Path]
) -> None:
    """Best effort: log_tail.txt flips between a file and a link to outside the root while
    the bundle is picked up. Whichever it sees, the link is never followed."""
    ws, outside = setup
    folder = drop(root, "flip", ws)
    log = folder / "log_tail.txt"
    done = threading.Event()

    def flip() -> None:
        while not done.is_set():
            try:
                tmp = folder / "flip.tmp"
                tmp.unlink(missing_ok=True)
                tmp.symlink_to(outside)
                os.replace(tmp, log)
                log.unlink(missing_ok=True)
                log.write_text("ruff failed\n")
            except OSError:
                return  # the folder moved (set aside or archived)

    thread = threading.Thread(target=flip)
    thread.start()
    try:
        r = cli("drive", folder.name)
    finally:
        done.set()
        thread.join()
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    assert outside.read_text() == SECRET
    for path in root.path.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET.encode() not in path.read_bytes(), f"{path} copied the outside file"


def test_a_broken_root_key_sets_no_bundle_aside(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seal key is the root's, not the bundle's: a key others can read stops every
    load, and no pass, however many, sets the bundles aside for it."""
    from tests.helpers import BROKEN, capture

    use_config(tmp_path, monkeypatch, '[checks]\ntools = ["ruff"]\n[tiers.aider]\nmode = '
               '"handoff"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n')  # fmt: skip
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, message="f.py broken", ws=ws, target="f.py", content=BROKEN)
    assert "AWAIT_HANDOFF" in cli("drive", incident_id).out
    os.chmod(root.seal_key, 0o644)
    for _ in range(4):
        r = cli("drive", incident_id)
        assert r.code != 0 and "seal.key" in r.err, r.err
    assert (root.inbox / incident_id).is_dir() and not (root.rejected / incident_id).exists()
    os.chmod(root.seal_key, 0o600)
    assert cli("drive", incident_id).code == 0
