"""A thread with its own mirror connection: reads run there, off the event loop.

`sqlite3` connections belong to the thread that opened them, so each `Reader` is one
worker thread holding one connection, opened on first use and opened again when the
database file was replaced (a rebuild that moved a corrupt file aside) or a read failed.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from incidents import mirror
from incidents.layout import Root

T = TypeVar("T")


class Reader:
    def __init__(self, root: Root, name: str) -> None:
        self.root = root
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"serve-{name}")
        self._conn: sqlite3.Connection | None = None
        self._ident: tuple[int, int] | None = None

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.root.db_path)
        except FileNotFoundError:
            return None
        return (st.st_dev, st.st_ino)

    def _connection(self) -> sqlite3.Connection:
        ident = self._identity()
        if self._conn is not None and ident == self._ident:
            return self._conn
        self._drop()
        conn = mirror.connect(self.root.db_path)
        try:
            mirror.ensure_derived(self.root, conn)  # a file made empty answers nothing
        except BaseException:
            conn.close()
            raise
        self._conn, self._ident = conn, self._identity()
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._ident = None, None

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(conn, *args)` on this thread's connection (call it on the reader's thread)."""
        try:
            return fn(self._connection(), *args)
        except (sqlite3.Error, mirror.MirrorError):
            self._drop()  # a connection in an unknown state is never used again
            raise

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(conn, *args)` on the reader's thread, awaited."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self.call, fn, *args)

    async def off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` (no connection) on the reader's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, fn, *args)

    def close(self) -> None:
        self._pool.submit(self._drop).result(timeout=10)
        self._pool.shutdown(wait=True)
