"""Parallel captures and SIGKILLed captures never corrupt the inbox (real subprocesses)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from incidents.models import Incident
from tests.helpers import SCRIPTS, run_script

BUNDLE = {"incident.json", "status.txt", "log_tail.txt", "audit_tail.jsonl", "context.json",
          "events.jsonl"}  # fmt: skip
CAPTURE = [sys.executable, str(SCRIPTS / "error_capture.py")]


def assert_inbox_is_whole(root: Root) -> list[dict[str, Any]]:
    docs = []
    for folder in root.inbox.iterdir():
        names = {p.name for p in folder.iterdir()}
        # a capture killed while adding an occurrence may leave the temp file of its
        # atomic write: never data (the file it was replacing is intact), swept later
        assert {n for n in names if not n.startswith(".")} == BUNDLE, folder
        assert all(n.endswith(".tmp") for n in names if n.startswith(".")), names
        doc = json.loads((folder / "incident.json").read_text())
        Incident.model_validate(doc)
        assert (folder / "status.txt").read_text() == doc["status"] + "\n"
        json.loads((folder / "context.json").read_text())
        docs.append(doc)
    return docs


@pytest.mark.slow
def test_100_parallel_captures_give_100_bundles(root: Root) -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(
            lambda i: run_script("error_capture.py", "--step", f"job{i % 7}",
                                 "--message", f"failure {i}", "--no-dedupe"),
            range(100),
        ))  # fmt: skip
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode]
    ids = {r.stdout.strip() for r in results}
    assert len(ids) == 100
    assert {d["incident_id"] for d in assert_inbox_is_whole(root)} == ids
    assert os.listdir(root.staging) == []


@pytest.mark.slow
def test_100_parallel_repeats_fold_into_exact_counts(root: Root) -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(
                lambda i: run_script(
                    "error_capture.py", "--step", f"job{i % 2}", "--message", f"timeout after {i}s"
                ),
                range(100),
            )
        )
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode]
    docs = assert_inbox_is_whole(root)
    assert sorted(d["occurrences"] for d in docs) == [50, 50]
    assert len({r.stdout.strip() for r in results}) == 2
    for doc in docs:  # each capture's line once, in its bundle's events.jsonl
        raw = (root.inbox / doc["incident_id"] / "events.jsonl").read_text().splitlines()
        keys = [json.loads(line)["key"] for line in raw]
        assert keys == ["captured", *(f"o{n}" for n in range(2, 51))]


def _names(root: Root) -> set[str]:
    """What staging and the inbox hold: a new name is a capture starting to write."""
    names: set[str] = set()
    for folder in (root.staging, root.inbox):
        with contextlib.suppress(FileNotFoundError):
            names.update(os.listdir(folder))
    return names


def test_sigkill_at_random_moments_never_leaves_a_partial_bundle(
    root: Root, tmp_path: Path
) -> None:
    """Captures SIGKILLed at random moments, some left to finish: the inbox only ever holds
    whole bundles, and every capture that said it succeeded left one. The moments follow
    the capture, not the clock, so they hold at any speed: a new capture is killed a few
    milliseconds after it starts to write (a new folder in staging or the inbox); a repeat,
    which folds into its open incident, at a time that follows how long a capture takes now
    (longer after a kill, shorter after one that finished)."""
    rng = random.Random(1234)
    log = tmp_path / "big.log"
    log.write_bytes(os.urandom(48_000).hex().encode())

    def attempt(i: int, scale: float | None) -> tuple[int, str, str]:
        args = ["--step", f"s{i % 3}", "--message", f"kill test {i % 5}", "--log-file", str(log)]
        if i % 2:
            args.append("--no-dedupe")
        before = _names(root)
        proc = subprocess.Popen(
            [*CAPTURE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        if scale is not None:
            if i % 2:
                while proc.poll() is None and _names(root) <= before:
                    time.sleep(0.001)
                time.sleep(rng.uniform(0.0, 0.02))
            else:
                time.sleep(rng.uniform(0.7, 1.1) * scale)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
        return proc.returncode, out, err

    began = time.monotonic()
    code, out, err = attempt(0, None)  # the plain path: one capture left alone
    assert code == 0, err
    reported = {out.strip()}
    scale = time.monotonic() - began  # the delay around which kills and successes balance
    kills = finished = 0
    deadline = time.monotonic() + 240  # a bound on a pathological machine, not a speed test
    for i in range(1, 600):
        if kills >= 20 and finished >= 8 or time.monotonic() > deadline:
            break
        code, out, err = attempt(i, scale)
        if code == -signal.SIGKILL:
            kills += 1
            scale *= 1.25 if i % 2 == 0 else 1
        else:
            assert code == 0, err  # a capture that was not killed succeeded
            finished += 1
            reported.add(out.strip())
            scale /= 1.25 if i % 2 == 0 else 1
    assert kills >= 20 and finished >= 8, f"{kills} killed, {finished} finished"
    docs = assert_inbox_is_whole(root)
    assert reported <= {d["incident_id"] for d in docs}
    # a killed capture may leave a folder in staging: never in the inbox, swept later
    for leftover in root.staging.iterdir():
        assert leftover.name.startswith("incident_")
