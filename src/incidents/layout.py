"""The reports root: its folders, incident ids, and where each incident lives.

Stdlib only: capture imports it, and without `pathlib` (~3 ms to import): a `Root` holds
its folder as a string (`dir`, and `sub()` for the paths below it, which is what the
capture path uses); `path` and the properties below are `Path`s made on first use.
"""

from __future__ import annotations

import os

from incidents.errors import InvalidId, NotFound, RootError
from incidents.fsutil import ensure_dir, publish_new_file

TYPE_CHECKING = False  # typing and pathlib stay off the capture path (import cost)
if TYPE_CHECKING:
    from pathlib import Path

INBOX = "error_inbox"
ARCHIVE = "error_archive"
RESOLVED = "error_archive/resolved"
ESCALATED = "error_archive/escalated"
PLANS = "error_plans"
RUNS = "error_runs"
REJECTED = "error_rejected"
REVIEW = "error_review"
STAGING = ".staging"  # bundles are built here, then renamed into the inbox
STATE = ".state"  # the SQLite mirror, locks, the signature index, the pause flag
LAYOUT = (INBOX, RESOLVED, ESCALATED, PLANS, RUNS, REJECTED, STAGING, STATE)
STATE_DIRS = ("locks", "pending", "dirty", "leases", "signatures")
GROUPS = "groups"  # .state/groups: where a merged signature's captures go (incidents.grouping)
SEAL_KEY = "seal.key"  # the step service's key for state.json's seal (incidents.step.seal)

BUCKETS = {"inbox": INBOX, "resolved": RESOLVED, "escalated": ESCALATED}
TERMINAL_STATUSES = ("resolved", "escalated")

_ID_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_ID_CHARS = _ID_FIRST | frozenset("._-")  # [A-Za-z0-9][A-Za-z0-9._-]{0,199}, no re.compile


def validate_id(incident_id: str) -> str:
    """An id is a single safe path component: letters, digits and `._-`, no `..`."""
    if not incident_id:
        raise InvalidId(incident_id, "it is empty")
    if "/" in incident_id or "\\" in incident_id or os.sep in incident_id:
        raise InvalidId(incident_id, "it contains a path separator")
    if ".." in incident_id:
        raise InvalidId(incident_id, "it contains '..'")
    if (
        len(incident_id) > 200
        or incident_id[0] not in _ID_FIRST
        or not _ID_CHARS.issuperset(incident_id)
    ):
        raise InvalidId(incident_id, "use letters, digits, '.', '_' and '-' (at most 200)")
    return incident_id


def shown_name(name: str) -> str:
    """A folder name as logs, reasons and the mirror show it: on one line, with no terminal
    escape, storable as UTF-8. Bytes that are not UTF-8 (decoded by the filesystem as
    surrogates) show as `\\xNN`, control and other unprintable characters as `\\xNN` or
    `\\uNNNN`; a printable name is shown as it is."""
    if name.isprintable():
        return name
    out = []
    for c in name:
        code = ord(c)
        if c.isprintable():
            out.append(c)
        elif 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (os.fsdecode's surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        else:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


class Root:
    """A reports root. `ensure()` creates its layout; paths below are derived, never stored.

    (A plain class, not a dataclass: `dataclasses` pulls `inspect` onto the capture path.)
    """

    __slots__ = ("dir", "_path")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.dir: str = os.fspath(path)
        self._path: Path | None = None

    @property
    def path(self) -> Path:
        if self._path is None:
            from pathlib import Path

            self._path = Path(self.dir)
        return self._path

    def sub(self, *parts: str) -> str:
        """The path of `parts` below the root, as a string (the capture path's twin of
        `root.path / ...`)."""
        return os.path.join(self.dir, *parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Root) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"Root({self.path!r})"

    @property
    def inbox(self) -> Path:
        return self.path / INBOX

    @property
    def staging(self) -> Path:
        return self.path / STAGING

    @property
    def state(self) -> Path:
        return self.path / STATE

    @property
    def rejected(self) -> Path:
        return self.path / REJECTED

    def mark_dirty(self, incident_id: str) -> None:
        """Tell the mirror that this bundle changed, or that its rows could not be written
        (an empty hint file; see mirror.catch_up). Cheap and best effort: a lost hint is
        found by catch_up's inbox listing."""
        try:
            fd = os.open(self.sub(STATE, "dirty", incident_id), os.O_WRONLY | os.O_CREAT, 0o600)
        except OSError:
            return
        os.close(fd)

    @property
    def db_path(self) -> Path:
        return self.path / STATE / "mirror.sqlite3"

    @property
    def locks(self) -> Path:
        return self.path / STATE / "locks"

    @property
    def seal_key(self) -> Path:
        return self.path / STATE / SEAL_KEY

    def bucket(self, name: str) -> Path:
        return self.path / BUCKETS[name]

    def plan_dir(self, incident_id: str) -> Path:
        return self.path / PLANS / validate_id(incident_id)

    def runs_dir(self, incident_id: str) -> Path:
        return self.path / RUNS / validate_id(incident_id)

    def ensure(self) -> Root:
        """Create the layout (0700 folders); refuse a root that is a file or world-writable.
        A new root (no inbox yet) gets its state.json seal key now, so that no state.json
        is ever sealed wholesale in it (`incidents.step.seal`: a root with an inbox and no
        key, from before the seal, gets its key at its first step, sealing the states of
        the incidents in flight; so does one whose `.state/` was deleted)."""
        import stat

        p = self.dir
        if os.path.exists(p) and not os.path.isdir(p):
            raise RootError(f"reports root {p} is not a directory")
        new = not os.path.isdir(os.path.join(p, INBOX))
        try:
            ensure_dir(p)
            st = os.stat(p)
            if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
                raise RootError(f"reports root {p} is world-writable; run: chmod o-w {p}")
            for sub in LAYOUT:
                ensure_dir(os.path.join(p, sub))
            for sub in STATE_DIRS:
                ensure_dir(os.path.join(p, STATE, sub))
            if new:
                publish_new_file(os.path.join(p, STATE, SEAL_KEY), os.urandom(32))
        except OSError as exc:
            raise RootError(f"cannot create the reports root {p}: {exc.strerror or exc}") from exc
        return self

    def ensure_fast(self) -> Root:
        """`ensure()` unless the layout is already complete (its last folder exists): one
        stat instead of a dozen mkdirs on the capture path."""
        if os.path.isdir(os.path.join(self.dir, STATE, STATE_DIRS[-1])):
            return self
        return self.ensure()

    def locate(self, incident_id: str) -> tuple[str, Path]:
        """Which bucket holds `incident_id` (inbox first); NotFound when none does."""
        validate_id(incident_id)
        for name in ("inbox", "resolved", "escalated"):
            candidate = self.bucket(name) / incident_id
            if candidate.is_dir() and not candidate.is_symlink():
                return name, candidate
        raise NotFound(f"no incident {incident_id!r} under {self.path}")


def resolve_root(cli_root: str | None, config_root: str | None = None) -> Root:
    """--root > INCIDENTS_ROOT > config > ./reports."""
    chosen = cli_root or os.environ.get("INCIDENTS_ROOT") or config_root or "reports"
    return Root(os.path.abspath(os.path.expanduser(chosen)))
