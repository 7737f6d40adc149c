"""Parallel captures and SIGKILLed captures never corrupt the inbox (real subprocesses)."""

from __future__ import annotations

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


def test_sigkill_at_random_moments_never_leaves_a_partial_bundle(
    root: Root, tmp_path: Path
) -> None:
    rng = random.Random(1234)
    log = tmp_path / "big.log"
    log.write_bytes(os.urandom(48_000).hex().encode())
    kills = 0
    for i in range(400):
        if kills >= 60:
            break
        args = ["--step", f"s{i % 3}", "--message", f"kill test {i % 5}", "--log-file", str(log)]
        if i % 2:
            args.append("--no-dedupe")
        proc = subprocess.Popen(
            [*CAPTURE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.0, 0.12))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 50, f"only {kills} captures were still running when killed"
    assert len(assert_inbox_is_whole(root)) >= 3  # some captures got through, some didn't
    # a killed capture may leave a folder in staging: never in the inbox, swept later
    for leftover in root.staging.iterdir():
        assert leftover.name.startswith("incident_")
