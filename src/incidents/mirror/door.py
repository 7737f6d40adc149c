"""The doors to the mirror for callers: `transaction(root)` and `best_effort(root)`.

A module that writes to the mirror on the side of its real work (the folders are the
truth) does it through `best_effort()`: opens, writes in one transaction, closes, and
warns instead of failing when the mirror cannot be written (`incidents reindex` rebuilds
it). `transaction()` is the same door for commands that must fail when the mirror does.

Both answer only from a derived database (invariant I5): one that `connect` created
empty (deleted, or replaced under a running process, or a new root) is rebuilt from the
folders first (`ensure_derived`), so no process fills an empty file with a few rows that
`status` would then take for the whole root.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

from incidents.layout import Root
from incidents.mirror.db import connect, shared, warn, write
from incidents.mirror.rebuild import ensure_derived

__all__ = ["BestEffort", "best_effort", "ensure_derived", "transaction"]


@contextmanager
def _opened(root: Root, kept: bool, busy_timeout_ms: int) -> Iterator[sqlite3.Connection]:
    if kept:
        with shared(root.db_path) as conn:
            ensure_derived(root, conn)
            yield conn
        return
    conn = connect(root.db_path, busy_timeout_ms=busy_timeout_ms)
    try:
        ensure_derived(root, conn)
        yield conn
    finally:
        conn.close()


@contextmanager
def transaction(
    root: Root, *, kept: bool = False, busy_timeout_ms: int = 5000
) -> Iterator[sqlite3.Connection]:
    """The root's mirror, opened for one `write()` transaction and closed after it (`kept`:
    the connection `shared()` keeps for this process and thread). Errors propagate."""
    with _opened(root, kept, busy_timeout_ms) as conn, write(conn):
        yield conn


def best_effort(
    root: Root,
    *,
    what: str = "mirror not updated",
    on_error: Callable[[BaseException], None] | None = None,
    errors: tuple[type[Exception], ...] = (Exception,),
    kept: bool = False,
    busy_timeout_ms: int = 5000,
    incident: str | None = None,
) -> BestEffort:
    """A write to the mirror that must never fail its caller: the folders are the truth.

    `with best_effort(root) as conn:` gives a connection inside one `write()` transaction
    (committed at the end of the block), or None when the mirror cannot be opened: then
    the block has nothing to write to and skips its writes. An exception of one of
    `errors` raised by the block or its commit rolls back and is reported instead of
    raised: to `on_error`, by default as `warn(exc, what)`; others propagate. Afterwards
    `.written` tells whether the block's writes were committed. `kept` and
    `busy_timeout_ms` as for `transaction`. `incident`: the incident whose rows the block
    writes; when they could not be written, a hint (`.state/dirty/<id>`) makes the next
    catch-up (any `status`, any watcher pass) derive them from its folder.
    """
    return BestEffort(
        root, on_error or (lambda exc: warn(exc, what)), errors, kept, busy_timeout_ms, incident
    )


class BestEffort:
    """The context manager `best_effort` returns; `written` is set once it committed."""

    def __init__(
        self,
        root: Root,
        report: Callable[[BaseException], None],
        errors: tuple[type[Exception], ...],
        kept: bool,
        busy_timeout_ms: int,
        incident: str | None = None,
    ) -> None:
        self.root, self._report, self.errors = root, report, errors
        self.incident = incident
        self.kept, self.busy_timeout_ms = kept, busy_timeout_ms
        self.written = False
        self._stack: contextlib.ExitStack | None = None

    def report(self, exc: BaseException) -> None:
        if self.incident is not None:
            self.root.mark_dirty(self.incident)
        self._report(exc)

    def __enter__(self) -> sqlite3.Connection | None:
        stack = contextlib.ExitStack()
        try:
            conn = stack.enter_context(_opened(self.root, self.kept, self.busy_timeout_ms))
            stack.enter_context(write(conn))
        except Exception as exc:  # the mirror is derivable: never stop the caller for it
            stack.__exit__(type(exc), exc, exc.__traceback__)  # closes (or drops) it
            self.report(exc)
            return None
        self._stack = stack
        return conn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        stack, self._stack = self._stack, None
        if stack is None:  # nothing was opened: the block's own errors are its caller's
            return False
        try:
            stack.__exit__(exc_type, exc, tb)  # commits or rolls back, then closes
        except self.errors as failure:  # the commit failed: rebuilt by reindex or a later sync
            self.report(failure)
            return True
        if exc is None:
            self.written = True
            return False
        if isinstance(exc, self.errors):
            self.report(exc)
            return True
        return False
