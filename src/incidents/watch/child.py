"""The first code a watcher's worker process runs: bind its life to the watcher's.

Standard library only, and nothing else imported before it: a spawned worker spends its
first second or more importing the step service (pydantic, the models, SQLite), and a
watcher killed in that time used to leave it running until it noticed, or for good when
it was mid-pickup. So the worker's target is this module's `serve`, which first asks the
kernel to SIGKILL it when its parent dies (`prctl(PR_SET_PDEATHSIG)`, Linux), then checks
that the parent is still the watcher that spawned it (one that died before the request
was made sends no signal), and only then loads the worker (`incidents.watch.worker`)
and the configuration, which travels pickled so that unpickling the process's arguments
imports nothing heavy either.
"""

from __future__ import annotations

import os
import pickle
import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from incidents.watch.worker import StopFlag

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> bool:
    """SIGKILL this process when its parent dies; exit now if `parent_pid` is gone already.
    False where the kernel has no such request (not Linux): the pipe's EOF remains."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        armed = bool(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        armed = False
    if os.getppid() != parent_pid:  # orphaned before the request: no signal will come
        os._exit(1)
    return armed


def serve(parent_pid: int, payload: bytes, conn: Connection, stop: StopFlag) -> None:
    """The worker process's target (`watch.pool`): `payload` is the pickled (root, config)."""
    die_with_parent(parent_pid)
    from incidents.watch.worker import serve as serve_pickups

    root_path, cfg = pickle.loads(payload)
    serve_pickups(conn, root_path, cfg, stop)
