"""The PostgreSQL backend: a pool per (process, URL, host, root) and `PgConnection`, which
answers the calls the mirror makes of a `sqlite3.Connection` with the same statements
rewritten by `mirror.dialect`.

psycopg 3 and psycopg_pool are imported here only, and this module only when a root is
bound to a PostgreSQL URL (`mirror.target`): capture and the SQLite default never load
them. Connections run in autocommit, so the mirror's visible transactions (`db.write`:
`BEGIN IMMEDIATE` ... `COMMIT`, savepoints inside) are the ones that happen; `BEGIN
IMMEDIATE` becomes `BEGIN` and a transaction-scoped advisory lock on the host, which
serialises one host's writers as SQLite's write lock serialises one root's, while other
hosts write at the same time (their rows are theirs; shared rows such as `errors` are
row-locked by PostgreSQL). Every session sets `incidents.host` and `incidents.root`: the
column defaults of the per-host tables and `dialect.here` read them.

Driver errors become `DatabaseFailure`, and a server that cannot be reached within the
timeout `MirrorUnavailable`, both `MirrorError`s: callers handle them as they handle a
SQLite error (`db.DATABASE_ERRORS`).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg_pool
from psycopg.pq import TransactionStatus

from incidents.mirror.dialect import POSTGRES, postgres
from incidents.mirror.failures import DatabaseFailure, MirrorError, MirrorUnavailable
from incidents.mirror.schema import MIGRATIONS, PG_EXTRA, PG_INSTEAD
from incidents.mirror.target import Target

__all__ = ["PgConnection", "close_pools", "connect", "schema_version", "server_now"]

CONNECT_TIMEOUT_S = 3
_MIGRATION_LOCK = 0x1C1DE275  # pg_advisory_xact_lock key while migrating
_WRITER_LOCK = "SELECT pg_advisory_xact_lock(hashtext(current_setting('incidents.host')))"

_POOLS: dict[tuple[int, str, str, str], psycopg_pool.ConnectionPool[Any]] = {}
_MIGRATED: set[tuple[int, str]] = set()
# when a connect last found the server down, and what it was told (said again meanwhile)
_FAILED: dict[tuple[int, str], tuple[float, str]] = {}
RETRY_S = 5.0
PROBE_S = 1.0
_LOCK = threading.Lock()

# the pool retries in the background and logs each failure; the mirror reports a server it
# cannot reach itself, once, in its own words (MirrorUnavailable)
logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)


@contextmanager
def _translated(what: str, target: Target | None = None) -> Iterator[None]:
    try:
        yield
    except psycopg_pool.PoolTimeout as exc:
        where = f" at {target.shown}" if target else ""
        raise MirrorUnavailable(
            f"the PostgreSQL mirror{where} cannot be reached ({what}: no connection within "
            f"{target.timeout_s if target else '?'} s); is the server up? `incidents doctor` checks"
        ) from exc
    except psycopg.OperationalError as exc:
        raise MirrorUnavailable(f"the PostgreSQL mirror failed ({what}): {_first(exc)}") from exc
    except psycopg.Error as exc:
        raise DatabaseFailure(f"PostgreSQL: {_first(exc)}") from exc


def _first(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class PgConnection:
    """One pooled connection, for one `connect()` ... `close()`; see the module doc."""

    dialect = POSTGRES

    def __init__(
        self, raw: psycopg.Connection[Any], pool: psycopg_pool.ConnectionPool[Any], target: Target
    ) -> None:
        self._raw, self._pool, self.target = raw, pool, target
        self.host, self.root = target.host, target.root

    def _live(self) -> psycopg.Connection[Any]:
        if self._raw is None:
            raise DatabaseFailure("the mirror connection is closed")
        return self._raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        self._live()
        with _translated("statement"):
            if sql == "BEGIN IMMEDIATE":
                self._raw.execute("BEGIN")
                return self._raw.execute(_WRITER_LOCK)
            return self._raw.execute(postgres(sql), tuple(params), prepare=False)

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> psycopg.Cursor[Any]:
        rows = list(seq)
        self._live()
        with _translated("statement"):
            cur = self._raw.cursor()
            if rows:
                cur.executemany(postgres(sql), rows)
            return cur

    @property
    def in_transaction(self) -> bool:
        return self._raw.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        raw, self._raw = self._raw, None  # type: ignore[assignment]
        if raw is None:
            return
        try:
            if not raw.closed and raw.info.transaction_status != TransactionStatus.IDLE:
                raw.rollback()
        except psycopg.Error:
            pass
        try:
            self._pool.putconn(raw)
        except (psycopg.Error, psycopg_pool.PoolTimeout, ValueError):
            raw.close()

    def __enter__(self) -> PgConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _configure(target: Target) -> Any:
    def configure(conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            "SELECT set_config('incidents.host', %s, false), "
            "set_config('incidents.root', %s, false), set_config('TimeZone', 'UTC', false)",
            (target.host, target.root),
        )

    return configure


def _probe(target: Target, timeout_s: float) -> None:
    """One direct connection before a new pool: the pool retries in the background and
    only times out, so a wrong password, a database that does not exist or a server that
    is down would all be "no connection within 5 s"; libpq says which, and at once."""
    assert target.url is not None
    seconds = max(2, min(CONNECT_TIMEOUT_S, math.ceil(timeout_s)))  # libpq: whole seconds
    try:
        psycopg.connect(target.url, autocommit=True, connect_timeout=seconds).close()
    except psycopg.OperationalError as exc:
        reason = _first(exc).removeprefix("connection failed: ").removeprefix("connection is bad: ")
        if "FATAL:" in reason:  # the server answered: it refuses this URL's role or database
            said = "refused the connection: " + " ".join(reason.split("FATAL:", 1)[1].split())
            raise MirrorUnavailable(f"the PostgreSQL mirror at {target.shown} {said}") from exc
        raise MirrorUnavailable(
            f"the PostgreSQL mirror at {target.shown} cannot be reached: {reason}"
        ) from exc
    except psycopg.Error as exc:  # the URL itself (an unknown parameter)
        raise MirrorError(f"bad mirror url {target.shown!r}: {_first(exc)}") from exc


def _pool(target: Target, timeout_s: float) -> psycopg_pool.ConnectionPool[Any]:
    assert target.url is not None
    key = (os.getpid(), target.url, target.host, target.root)
    if key not in _POOLS:
        _probe(target, timeout_s)
    with _LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = psycopg_pool.ConnectionPool(
                target.url,
                min_size=1,
                max_size=8,
                kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
                configure=_configure(target),
                check=psycopg_pool.ConnectionPool.check_connection,
                timeout=max(timeout_s, 0.5),
                reconnect_timeout=0,  # keep trying in the background, never give up
                name=f"incidents-{target.host}",
                open=False,
            )
            try:
                pool.open(wait=False)
            except psycopg.Error as exc:
                raise MirrorError(f"bad mirror url: {_first(exc)}") from exc
            _POOLS[key] = pool
    return pool


def _drop_pool(target: Target) -> None:
    with _LOCK:
        pool = _POOLS.pop((os.getpid(), str(target.url), target.host, target.root), None)
    if pool is not None:
        pool.close(timeout=0)


def close_pools() -> None:
    """Close this process's pools (tests, and a process about to exit)."""
    with _LOCK:
        for key in [k for k in _POOLS if k[0] == os.getpid()]:
            _POOLS.pop(key).close(timeout=1)


def connect(target: Target, *, timeout_s: float = 5.0) -> PgConnection:
    """A connection of the target's pool, the schema migrated (once per process); waits
    at most the target's timeout for the server (`timeout_s`: a SQLite busy timeout, which
    can only make it shorter).

    A server found unreachable is not waited for again for `RETRY_S`: every write on the
    side fails at once meanwhile (and leaves its hint), then one probe waits `PROBE_S`, so
    a host whose database is down keeps working at its own pace (`incidents.fleet`)."""
    timeout_s = min(timeout_s, target.timeout_s)
    key = (os.getpid(), str(target.url))
    failed = _FAILED.get(key)
    if failed is not None:
        if time.monotonic() < failed[0] + RETRY_S:
            raise MirrorUnavailable(f"{failed[1]} (retried every {RETRY_S:g} s)")
        timeout_s = min(timeout_s, PROBE_S)
    try:
        pool = _pool(target, timeout_s)
        with _translated("connect", target):
            raw = pool.getconn(timeout=timeout_s)
    except MirrorUnavailable as exc:
        _FAILED[key] = (time.monotonic(), str(exc))
        _drop_pool(target)  # its reconnect backs off for minutes: the next probe starts anew
        raise
    _FAILED.pop(key, None)
    conn = PgConnection(raw, pool, target)
    try:
        if key not in _MIGRATED:
            _migrate(conn)
            _MIGRATED.add(key)
    except BaseException:
        conn.close()
        raise
    return conn


def _statements(script: str) -> list[str]:
    """A migration's statements (its comments, which may hold a `;`, dropped first)."""
    text = "\n".join(line.split("--", 1)[0] for line in script.splitlines())
    return [s for s in text.split(";") if s.strip()]


def schema_version(conn: PgConnection) -> int:
    """How many of MIGRATIONS the database has (0: none, or no mirror there yet)."""
    found = conn.execute("SELECT to_regclass('mirror_schema')").fetchone()
    if found is None or found[0] is None:
        return 0
    row = conn.execute("SELECT max(version) FROM mirror_schema").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _migrate(conn: PgConnection) -> None:
    target = len(MIGRATIONS)
    if schema_version(conn) == target:
        return
    conn.execute("BEGIN")
    try:
        conn.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        conn.execute("CREATE TABLE IF NOT EXISTS mirror_schema (version INTEGER NOT NULL)")
        current = schema_version(conn)  # again, under the lock: another may have won
        if current > target:
            raise MirrorError(
                f"the PostgreSQL mirror has schema version {current}, newer than this "
                f"program's {target}; upgrade incidents on this host"
            )
        for number in range(current, target):
            common = PG_INSTEAD.get(number, MIGRATIONS[number])
            for statement in _statements(common + PG_EXTRA.get(number, "")):
                with _translated("migration"):
                    conn._raw.execute(postgres(statement, schema=True))
        conn.execute("DELETE FROM mirror_schema")
        conn.execute("INSERT INTO mirror_schema (version) VALUES (?)", (target,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def server_now(conn: PgConnection) -> float:
    """The server's clock, as epoch seconds (doctor compares it with ours)."""
    row = conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
    if row is None:
        raise DatabaseFailure("the server did not tell its time")
    return float(row[0])
