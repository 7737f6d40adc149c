"""`doctor` on a root whose mirror is a PostgreSQL shared by a fleet (`[mirror] url`): the
connection, the migration level, this host's clock against the database's, the hosts that
stopped reporting, and whether this host last worked without the database (degraded)."""

from __future__ import annotations

import time
from datetime import datetime

from incidents.config import Config
from incidents.doctor_inbox import Finding
from incidents.layout import Root
from incidents.mirror.fleet import HostReport
from incidents.mirror.target import target_of

__all__ = ["SKEW_FAIL_S", "SKEW_WARN_S", "check_fleet"]

SKEW_WARN_S = 2.0  # leases expire by the database's clock, ISO times are each host's own
SKEW_FAIL_S = 30.0


def check_fleet(root: Root, cfg: Config) -> list[Finding]:
    from incidents import fleet, mirror
    from incidents.mirror import pg
    from incidents.mirror.schema import MIGRATIONS

    found = target_of(root.db_path)
    out: list[Finding] = []
    was = fleet.degraded(root)
    if was is not None:
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(was.since))
        out.append(Finding("degraded", "warn", f"since {since} this host works without the "
                           f"shared mirror: {was.reason}",
                           "bring the database back; the next watcher pass catches up"))  # fmt: skip
    try:
        conn = mirror.connect(root.db_path)
    except mirror.MirrorError as exc:
        return [*out, Finding("postgres", "fail", f"cannot connect to {found.shown}: {exc}",
                              "start the server, or correct [mirror] url")]  # fmt: skip
    try:
        out.append(Finding("postgres", "ok", f"{found.shown} as host {found.host}"))
        out.append(_level(pg.schema_version(conn), len(MIGRATIONS)))  # type: ignore[arg-type]
        before = time.time()
        server = pg.server_now(conn)  # type: ignore[arg-type]
        skew = server - (before + time.time()) / 2
        out.append(_skew(skew))
        out.extend(_silent(mirror.hosts(conn), cfg.mirror.silent_after_s, server))
    finally:
        conn.close()
    return out


def _level(have: int, want: int) -> Finding:
    if have == want:
        return Finding("migrations", "ok", f"schema version {have}")
    if have > want:
        return Finding("migrations", "fail", f"schema version {have}, newer than this "
                       f"program's {want}", "upgrade incidents on this host")  # fmt: skip
    return Finding("migrations", "fail", f"schema version {have}, older than {want}",
                   "run any incidents command on this host to migrate")  # fmt: skip


def _skew(skew: float) -> Finding:
    said = f"this host's clock is {abs(skew):.2f} s {'behind' if skew > 0 else 'ahead of'} the database's"
    if abs(skew) >= SKEW_FAIL_S:
        return Finding("clock", "fail", said, "synchronise the clocks (NTP)")
    if abs(skew) >= SKEW_WARN_S:
        return Finding("clock", "warn", said, "synchronise the clocks (NTP)")
    return Finding("clock", "ok", said)


def _silent(hosts: list[HostReport], silent_after_s: float, now: float) -> list[Finding]:
    quiet = []
    for h in hosts:
        try:
            age = now - datetime.fromisoformat(h.last_seen).timestamp()
        except ValueError:
            age = float("inf")
        if age > silent_after_s:
            quiet.append(f"{h.host} ({h.root}, silent {age / 60:.0f} min)")
    if quiet:
        return [Finding("hosts", "warn", f"{len(quiet)} host(s) stopped reporting: "
                        + ", ".join(quiet[:5]), "check their watchers")]  # fmt: skip
    return [Finding("hosts", "ok", f"{len(hosts)} host(s) reporting")]
