"""A real PostgreSQL server for the tests: Debian's server binaries, initdb into a temporary
folder, listening only on a Unix socket there, stopped and removed after.

The binaries are found on PATH or under /usr/lib/postgresql/*/bin (where Debian puts them,
off PATH), installed with apt-get (`tests.debian.install`) when missing; a test
that needs the server skips with the reason only where none can be had. PostgreSQL
refuses to run as root: as root, the data folder belongs to the `postgres` user the
package creates and the server runs under `runuser`. Under pytest-xdist each worker
starts its own server (session scope); each test gets a database of its own (`fresh`).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.debian import install

SERVER_PROGRAMS = ("initdb", "pg_ctl", "postgres")
START_TIMEOUT_S = 60


def _bin_dir() -> tuple[Path | None, str]:
    """The folder holding initdb, pg_ctl and postgres, or None and why not."""

    def look() -> Path | None:
        on_path = [shutil.which(p) for p in SERVER_PROGRAMS]
        if all(on_path):
            return Path(os.path.realpath(str(on_path[0]))).parent
        for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
            if all(os.access(os.path.join(folder, p), os.X_OK) for p in SERVER_PROGRAMS):
                return Path(folder)
        return None

    if (found := look()) is not None:
        return found, ""
    # the server package puts its programs off PATH, and psql alone (the client) may be
    # there without them: install `postgresql` whenever the server's programs are missing
    why = install("postgresql")
    return look(), why or "the postgresql package is installed but initdb is not found"


@dataclass
class Server:
    """One running server: its socket folder, data folder and the OS user it runs as."""

    bin: Path
    base: Path  # data/ and sock/ below it
    user: str | None  # run as this user (None: as ourselves)
    databases: int = 0
    durable: bool = False  # fsync and synchronous commits, as in production (benchmarks)

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base / "sock"

    def url(self, dbname: str = "postgres") -> str:
        role = self.user or pwd.getpwuid(os.geteuid()).pw_name
        return f"postgresql://{role}@/{dbname}?host={self.socket_dir}"

    def _run(self, *argv: str, check: bool = True, timeout: float = 120) -> str:
        cmd = [str(self.bin / argv[0]), *argv[1:]]
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd="/")
        if check and done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def init(self) -> None:
        for folder in (self.data, self.socket_dir):
            folder.mkdir(mode=0o700, parents=True)
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            for folder in (self.base, self.data, self.socket_dir):
                os.chown(folder, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-E", "UTF8", "--no-sync")

    def start(self) -> None:
        """Start (again) on the same data: a Unix socket only, no TCP, quick shutdown."""
        options = f"-c listen_addresses='' -k {self.socket_dir} -c max_connections=200"
        if not self.durable:  # tests: a crash of the machine loses a throw-away database
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.base / "log.txt"),
            "-w", "-t", str(START_TIMEOUT_S), "start",
        )  # fmt: skip

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", check=False)

    def create_database(self) -> str:
        """A new empty database; its URL."""
        import psycopg

        self.databases += 1
        name = f"t{os.getpid()}_{self.databases}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _log_tail(base: Path) -> str:
    try:
        return (base / "log.txt").read_text(errors="replace")[-400:]
    except OSError:
        return ""


def start_server(durable: bool = False) -> tuple[Server | None, str]:
    """A running server in a new temporary folder, or None and why there cannot be one
    (`durable`: fsync on, as a production server runs)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg is not installed (pip install -e '.[dev]')"
    bin_dir, why = _bin_dir()
    if bin_dir is None:
        return None, f"no PostgreSQL server binaries: {why}"
    user: str | None = None
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres").pw_name
        except KeyError:
            return None, "running as root and there is no `postgres` user to run the server as"
    # short path: a Unix socket's path must stay under ~100 bytes
    base = Path(tempfile.mkdtemp(prefix="incpg-", dir="/tmp"))
    os.chmod(base, 0o755)
    server = Server(bin_dir, base, user, durable=durable)
    try:
        server.init()
        server.start()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        tail = _log_tail(base)
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
        return None, f"PostgreSQL would not start: {exc} {tail}".strip()
    return server, ""


def stop_server(server: Server) -> None:
    server.stop()
    shutil.rmtree(server.base, ignore_errors=True)


def wait_until_up(server: Server, timeout: float = 30) -> None:
    """Block until the server answers (after `start` following a `stop`)."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(server.url(), connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
