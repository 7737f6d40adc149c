"""Lease rows expire by the database's clock; a host whose own clock differs (within what
doctor tolerates, or not) must still renew its lease in time. The host's clock is really
set apart: the watcher's process runs under libfaketime (Debian's `faketime`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.debian import find_or_install

RENEW = """
import sys, time
from incidents import leases
from incidents.layout import Root
from incidents.mirror import target
root = Root(sys.argv[1])
target.bind(root.path, sys.argv[2], "a", leases="postgres")
held = leases.acquire(root, "inc1", "A", ttl_s=4.0)
time.sleep(2.5)  # more than half the ttl: due for renewal
renewed = leases.renew_if_due(root, held, ttl_s=4.0)
print("renewed" if renewed.expires_at != held.expires_at else "kept")
"""


def test_a_host_whose_clock_is_behind_the_database_renews_its_lease_row_in_time(
    tmp_path: Path, pg_url: str
) -> None:
    faketime, why = find_or_install("faketime", "faketime")
    if faketime is None:
        pytest.skip(why)
    root = Root(tmp_path / "reports").ensure()
    # three seconds behind the database: by its own clock, compared with the row's expiry
    # in the database's, the lease looked 4.5 s from expiry after 2.5 s of a 4 s lease
    done = subprocess.run(
        [faketime, "-f", "-3s", sys.executable, "-c", RENEW, str(root.path), pg_url],
        capture_output=True, text=True, timeout=120, env={**os.environ},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "renewed"
