"""Hostile names and trees never stop the watcher, `status` or `reindex`: each is set aside
with a reason, and the valid bundles beside them are still worked. Real folders, real
`incidents watch`/`status`/`reindex` subprocesses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from incidents import bundle_files
from incidents.layout import Root
from tests.helpers import incidents
from tests.watch.helpers import capture_step, places, run_watch, workspace

# Names no one can read on a terminal, each in its own way: bytes that are not UTF-8, a
# terminal escape, a newline that would forge a log line of its own, a C1 control.
HOSTILE_NAMES = (
    b"incident_\xff\xfe_not_utf8",
    b"incident_esc\x1b[2J\x1b]0;owned\x07",
    b"incident_nl\n06:00:00.000 info  forged id=x",
    "incident_c1\u009b31m_\u202eevil".encode(),
)


def _run(tmp: Path, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "INCIDENTS_ROOT": str(tmp / "reports")}
    p = incidents(*args, env=env, cwd=tmp)
    return p.returncode, p.stdout, p.stderr


def _no_terminal_control(text: str) -> bool:
    return all(c.isprintable() or c == "\n" for c in text)


def _worked(root: Root, incident_id: str) -> bool:
    """Taken by the watcher: its state was committed, wherever it is now."""
    where = places(root).get(incident_id, [""])[0]
    return where != "error_rejected" and (root.path / where / incident_id / "state.json").exists()


@pytest.mark.parametrize("as_json", [False, True])
def test_names_that_cannot_be_shown_are_set_aside_and_break_nothing(
    tmp_path: Path, root: Root, as_json: bool
) -> None:
    workspace(tmp_path)
    valid = capture_step(tmp_path, "beside")
    root.ensure()
    for bucket in (root.inbox, root.rejected, root.bucket("resolved")):
        for name in HOSTILE_NAMES:
            os.mkdir(os.fsencode(bucket) + b"/" + name)
    args = ("--log-json",) if as_json else ()
    env = {**os.environ, "INCIDENTS_ROOT": str(root.path)}
    watch = incidents("watch", "--once", *args, env=env, cwd=tmp_path)
    assert watch.returncode == 0, watch.stderr
    # no log line is forged, and no terminal control reaches the terminal
    assert _no_terminal_control(watch.stderr), watch.stderr
    assert "forged" not in "".join(line.split(" ", 1)[0] for line in watch.stderr.splitlines())
    lines = watch.stderr.splitlines()
    if as_json:
        assert all(json.loads(line) for line in lines)
    # each is set aside under a name that can be shown, with the name it had in its reason
    assert all(n.isprintable() for n in os.listdir(root.inbox))
    aside = [n for n in os.listdir(root.rejected) if n.startswith("unprintable-name-")]
    assert len(aside) == len(HOSTILE_NAMES)
    reasons = [(root.rejected / n / "reason.txt").read_text() for n in aside]
    assert all(_no_terminal_control(r) and "its folder name was" in r for r in reasons)
    assert any("\\xff\\xfe" in r for r in reasons)
    # status and reindex work on the names left in the other buckets
    for command in (("status",), ("status", "--json"), ("reindex",), ("status",)):
        code, out, err = _run(tmp_path, *command)
        assert code == 0, err
        assert _no_terminal_control(out + err), out + err
    # the positive control: the valid bundle beside them was worked
    assert _worked(root, valid)


def _deep(folder: Path, levels: int, name: bytes) -> None:
    """`levels` folders one in another below `folder`, made relative to each other (so
    the whole path may be longer than PATH_MAX)."""
    os.mkdir(folder)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open(b"incident.json", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), "w"):
            pass
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "levels, name",
    [(24, b"d" * 250), (40, b"d")],  # past PATH_MAX (ENAMETOOLONG); deep but short
    ids=["past-path-max", "deep-short-names"],
)
def test_a_tree_nested_too_deep_is_set_aside_and_bundles_after_it_are_worked(
    tmp_path: Path, root: Root, levels: int, name: bytes
) -> None:
    workspace(tmp_path)
    root.ensure()
    deep_id = "incident_20261124_000000_deep_0123456789ab"
    _deep(root.inbox / deep_id, levels, name)
    for _ in range(2):  # at every restart too: the watcher never dies on it
        watch = run_watch(tmp_path, "--once")
        assert watch.returncode == 0, watch.stderr
        assert places(root)[deep_id] == ["error_rejected"]
    reason = (root.rejected / deep_id / "reason.txt").read_text()
    assert "cannot be examined" in reason or "folders deep" in reason
    assert len(reason) < 2000  # the reason quotes a bounded part of the path
    after = capture_step(tmp_path, "after")  # a valid bundle dropped after it
    assert run_watch(tmp_path, "--once").returncode == 0
    assert _worked(root, after)
    code, _, err = _run(tmp_path, "reindex")
    assert code == 0, err


def test_listing_a_tree_that_cannot_be_examined_gives_problems_not_errors(
    tmp_path: Path,
) -> None:
    """ELOOP, ENAMETOOLONG: examining the bundle's entries says what is wrong."""
    folder = tmp_path / "b"
    _deep(folder, 20, b"e" * 250)
    problems = bundle_files.listing_problems(folder)
    assert problems and all(len(p) < 400 for p in problems)
    ok = tmp_path / "ok"
    (ok / "attachments").mkdir(parents=True)
    (ok / "attachments" / "a.txt").write_text("x")
    assert bundle_files.listing_problems(ok) == []


@pytest.mark.parametrize("bucket", ["resolved", "escalated"])
def test_a_bundle_reusing_a_closed_incidents_id_is_refused_and_the_verdict_kept(
    tmp_path: Path, root: Root, bucket: str
) -> None:
    workspace(tmp_path)
    closed = capture_step(tmp_path, "closed")
    reused = capture_step(tmp_path, "reuser")
    other = capture_step(tmp_path, "other")  # the positive control
    archived = root.bucket(bucket) / closed
    os.makedirs(archived.parent, exist_ok=True)
    os.rename(root.inbox / closed, archived)
    (archived / "verdict.txt").write_text("the verdict a person gave\n")
    before = {p.name: p.read_bytes() for p in archived.iterdir() if p.is_file()}
    # a new bundle takes the closed incident's id
    doc = json.loads((root.inbox / reused / "incident.json").read_text())
    doc["incident_id"] = closed
    os.rename(root.inbox / reused, root.inbox / closed)
    (root.inbox / closed / "incident.json").write_text(json.dumps(doc))
    watch = run_watch(tmp_path, "--once")
    assert watch.returncode == 0, watch.stderr
    assert {p.name: p.read_bytes() for p in archived.iterdir() if p.is_file()} == before
    assert places(root)[closed] == [f"error_archive/{bucket}", "error_rejected"]
    assert f"already {bucket}" in (root.rejected / closed / "reason.txt").read_text()
    assert _worked(root, other)


@pytest.mark.parametrize(
    "bomb",
    [
        b"[" * 200_000 + b"]" * 200_000,
        b'{"key": "k", "a": ' + b'{"b": ' * 5_000 + b"1" + b"}" * 5_001,
    ],
    ids=["arrays-past-the-recursion-limit", "objects-past-the-depth-cap"],
)
def test_a_nesting_bomb_in_events_is_a_line_that_does_not_parse(
    tmp_path: Path, root: Root, bomb: bytes
) -> None:
    from incidents import eventlog

    workspace(tmp_path)
    bombed = capture_step(tmp_path, "bombed")
    events = root.inbox / bombed / "events.jsonl"
    good = events.read_bytes()
    with open(events, "ab") as fh:
        fh.write(bomb + b"\n")
    docs, _, bad = eventlog.read(events)
    assert bad == 1 and len(docs) == good.count(b"\n")
    for command in (("status",), ("reindex",), ("status", "--json")):
        code, _, err = _run(tmp_path, *command)
        assert code == 0, err
    assert run_watch(tmp_path, "--once").returncode == 0
    assert _worked(root, bombed)
