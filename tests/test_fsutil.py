"""Durable, symlink-safe file primitives and strict JSON parsing of untrusted files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from incidents import fsutil
from incidents.errors import InvalidDocument, UnsafeFile


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    fsutil.atomic_write_json(target, {"a": 1})
    fsutil.atomic_write_json(target, {"a": 2})
    assert fsutil.read_json(target) == {"a": 2}
    assert os.listdir(tmp_path) == ["doc.json"]
    assert target.stat().st_mode & 0o777 == 0o600


def test_bundle_files_that_are_not_plain_files_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("{}")
    (tmp_path / "link.json").symlink_to(real)
    with pytest.raises(UnsafeFile, match="symbolic link"):
        fsutil.read_json(tmp_path / "link.json")
    os.link(real, tmp_path / "hard.json")
    with pytest.raises(UnsafeFile, match="hard links"):
        fsutil.read_json(tmp_path / "hard.json")
    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(UnsafeFile, match="not a regular file"):
        fsutil.read_json(tmp_path / "fifo.json")
    (tmp_path / "big.json").write_text("[" + "1," * 600_000 + "1]")
    with pytest.raises(UnsafeFile, match="over the cap"):
        fsutil.read_json(tmp_path / "big.json")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"a": NaN}', "NaN"),
        (b'{"a": Infinity}', "Infinity"),
        (b'{"a": 1, "a": 2}', "duplicate key"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[" * 65 + b"]" * 65, "nested deeper"),
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper"),
        (b"{not json", "not valid JSON"),
    ],
)
def test_untrusted_json_is_parsed_strictly(data: bytes, reason: str) -> None:
    with pytest.raises(InvalidDocument, match=reason):
        fsutil.parse_json_strict(data, "x.json")


def test_orphaned_temp_files_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    orphan = tmp_path / f".state.json.{dead}.0123abcd.tmp"
    live = tmp_path / f".state.json.{os.getpid()}.89abcdef.tmp"
    other = tmp_path / ".hidden"
    for p in (orphan, live, other):
        p.write_text("x")
    assert fsutil.remove_orphan_temps(tmp_path) == [orphan.name]
    assert live.exists() and other.exists() and not orphan.exists()


def test_temp_file_names_are_recognised_and_absurd_pids_are_not_alive(tmp_path: Path) -> None:
    assert fsutil.atomic_temp_pid(".log_tail.txt.4242.0123abcd.tmp") == 4242
    for name in (".log_tail.txt.tmp", ".status.txt.Xq3d9A", "log.4242.0123abcd.tmp",
                 ".x.4242.0123ABCD.tmp", ".x.4242.0123abcd.tmp.swp"):  # fmt: skip
        assert fsutil.atomic_temp_pid(name) is None, name
    huge = tmp_path / f".state.json.{10**30}.0123abcd.tmp"  # a crafted name, not a crash
    huge.write_text("x")
    assert fsutil.remove_orphan_temps(tmp_path) == [huge.name]


def test_atomic_replace_files_replaces_in_order_and_a_failure_keeps_the_rest(
    tmp_path: Path,
) -> None:
    (tmp_path / "b.txt").write_text("old b\n")
    fsutil.atomic_replace_files(tmp_path, [("a.json", b"{}\n"), ("b.txt", b"new b\n")])
    assert (tmp_path / "a.json").read_bytes() == b"{}\n"
    assert (tmp_path / "b.txt").read_bytes() == b"new b\n"
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o600
    (tmp_path / "c").mkdir()  # a folder cannot be replaced by a file: the second write fails
    with pytest.raises(OSError):
        fsutil.atomic_replace_files(tmp_path, [("a.json", b"[]\n"), ("c", b"x"), ("b.txt", b"z")])
    assert (tmp_path / "a.json").read_bytes() == b"[]\n"  # the prefix before the failure
    assert (tmp_path / "b.txt").read_bytes() == b"new b\n"  # after it: the old file, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.txt", "c"]  # no temps


def test_dump_model_writes_what_dump_json_writes() -> None:
    """state.json, reports and plans are serialized by pydantic (fast) but must read as
    before: the same bytes as json's indenting encoder, non-ASCII kept as is; only tiny
    floats spell their exponent differently (1e-7, not 1e-07), with the same value."""
    from datetime import UTC, datetime

    from pydantic import BaseModel

    class Doc(BaseModel):
        text: str
        when: datetime
        ratio: float
        big: int
        nested: dict[str, list[float | None]]

    doc = Doc(
        text="é \u2028 \"q\" \\\\ \x01", when=datetime(2026, 2, 17, 3, 0, 0, 123456, tzinfo=UTC),
        ratio=0.125, big=2**70, nested={"a": [0.1, None, 1e16, 2.0, 0.001], "": []},
    )  # fmt: skip
    assert fsutil.dump_model(doc) == fsutil.dump_json(doc.model_dump(mode="json"))
    tiny = doc.model_copy(update={"ratio": 1e-07})
    assert json.loads(fsutil.dump_model(tiny)) == json.loads(
        fsutil.dump_json(tiny.model_dump(mode="json"))
    )


def test_write_new_files_writes_every_file_and_never_replaces(tmp_path: Path) -> None:
    """A bundle's files in one call (each fsynced, then the folder): all of them whole and
    private; a name that exists is refused by its path, and is left as it was."""
    from incidents.fsutil import write_new_files

    files = {"a.json": b'{"a": 1}', "b.txt": b"", "c.log": b"x" * 100_000}
    write_new_files(str(tmp_path), files)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files
    assert {p.stat().st_mode & 0o777 for p in tmp_path.iterdir()} == {0o600}
    (tmp_path / "old").write_bytes(b"keep")
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(FileExistsError) as caught:
        write_new_files(str(tmp_path), {"new": b"n", "old": b"replaced?"})
    assert caught.value.filename == str(tmp_path / "old")
    assert (tmp_path / "old").read_bytes() == b"keep"
    assert len(os.listdir("/proc/self/fd")) == before  # nothing left open
