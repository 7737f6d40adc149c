"""`incidents doctor`: is this reports root healthy, and if not, how to fix it.

Each check returns findings (ok, warn, fail) with a fix; it repairs nothing. The one write
is the one every `status` makes: the mirror is caught up with the captures' pending hints
(`.state/dirty/<id>`) before it is compared with the folders, so that a capture nobody has
folded in yet is not reported as drift.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from incidents.config import Config
from incidents.doctor_fleet import check_fleet
from incidents.doctor_inbox import Finding, changed_within, check_staging, check_stuck
from incidents.errors import IncidentsError
from incidents.layout import INBOX, LAYOUT, STAGING, STATE_DIRS, Root
from incidents.mirror.target import target_of

NETWORK_FS = (
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "fuse.sshfs",
    "9p",
    "afs",
    "ceph",
    "glusterfs",
)


def diagnose(root: Root, cfg: Config) -> list[Finding]:
    findings = check_layout(root)
    if any(f.level == "fail" and f.check == "root" for f in findings):
        return findings
    checks: list[Callable[[], Iterable[Finding]]] = [
        lambda: check_filesystem(root, cfg),
        lambda: check_database(root, cfg.watch.staging_grace_s),
        lambda: check_fleet(root, cfg) if target_of(root.db_path).url else [],
        lambda: check_tools(cfg),
        lambda: check_containment(cfg, root),
        lambda: check_tiers(cfg),
        lambda: check_leases(root),
        lambda: check_stuck(root, cfg),
        lambda: check_staging(root, cfg),
        lambda: check_pending(root),
        lambda: check_pause(root),
        lambda: check_seal(root),
    ]
    for check in checks:
        try:
            findings.extend(check())
        except IncidentsError as exc:  # e.g. a tool profile the config cannot build
            findings.append(Finding("config", "fail", str(exc), "correct incidents.toml"))
        except Exception as exc:  # a check that breaks is itself a finding, not a crash
            findings.append(Finding("doctor", "fail", f"a check failed: {exc!r}", "report a bug"))
    return findings


# --- layout and permissions ----------------------------------------------------------------


def check_layout(root: Root) -> list[Finding]:
    p = root.path
    if not p.exists():
        return [Finding("root", "fail", f"{p} does not exist",
                        f"create it: incidents watch --once --root {p} (or any command)")]  # fmt: skip
    if not p.is_dir():
        return [Finding("root", "fail", f"{p} is not a directory", "point --root at a folder")]
    out: list[Finding] = []
    st = p.stat()
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        out.append(Finding("root", "fail", f"{p} is world-writable", f"chmod o-w {p}"))
    elif st.st_uid != os.getuid():
        out.append(Finding("root", "warn", f"{p} belongs to uid {st.st_uid}, not you",
                           f"chown -R {os.getuid()} {p}"))  # fmt: skip
    else:
        out.append(Finding("root", "ok", str(p)))
    missing = [s for s in LAYOUT if not (p / s).is_dir()]
    missing += [f".state/{s}" for s in STATE_DIRS if not (p / ".state" / s).is_dir()]
    if missing:
        out.append(Finding("layout", "fail", f"missing folders: {', '.join(missing)}",
                           f"incidents status --root {p} creates them"))  # fmt: skip
    else:
        out.append(Finding("layout", "ok", "all folders present"))
    out.extend(_permissions(p))
    return out


# where a bundle can be put so that the watcher works it (and runs its verify command as
# the watcher's user): nobody else may write there, sticky bit or not
ENTRY_POINTS = ("", INBOX, STAGING)


def _permissions(p: Path) -> list[Finding]:
    open_entry: list[tuple[str, str]] = []
    loose: list[str] = []
    unwritable: list[str] = []
    for sub in ("", *LAYOUT):
        folder = p / sub
        if not folder.is_dir():
            continue
        mode = folder.stat().st_mode
        if sub in ENTRY_POINTS and mode & (stat.S_IWGRP | stat.S_IWOTH):
            open_entry.append((f"{sub or '.'} ({stat.filemode(mode)})", str(folder)))
        elif mode & (stat.S_IRWXG | stat.S_IRWXO):
            loose.append(f"{sub or '.'} ({stat.filemode(mode)})")
        if not os.access(folder, os.W_OK | os.X_OK):
            unwritable.append(sub or ".")
    out: list[Finding] = []
    if open_entry:
        out.append(Finding("permissions", "fail",
                           f"writable by group/others: {', '.join(n for n, _ in open_entry)}; "
                           "anyone there can drop a bundle whose commands run as you",
                           f"chmod go-w {' '.join(f for _, f in open_entry)}"))  # fmt: skip
    if unwritable and read_only(p):
        out.append(Finding("read-only", "fail", f"{p} is on a read-only filesystem: capture, "
                           "steps and the watcher fail (exit 1, nothing lost); status and "
                           "doctor read the folders", "remount it read-write "
                           f"(mount -o remount,rw on the filesystem that holds {p})"))  # fmt: skip
    elif unwritable:
        out.append(Finding("permissions", "fail", f"not writable: {', '.join(unwritable)}",
                           f"chmod u+rwx on them under {p}"))  # fmt: skip
    if loose:
        out.append(Finding("permissions", "warn", f"open to group/others: {', '.join(loose)}",
                           f"chmod -R go-rwx {p}"))  # fmt: skip
    if not out:
        out.append(Finding("permissions", "ok", "folders are 0700 and writable"))
    return out


def read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _mount_type(path: Path) -> str | None:
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:
            mounts = [line.split()[1:3] for line in fh if len(line.split()) >= 3]
    except OSError:
        return None
    real = os.path.realpath(path)
    best: tuple[str, str | None] = ("", None)
    for mount_point, fstype in mounts:
        mp = mount_point.replace("\\040", " ")
        if (real == mp or real.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best[0]):
            best = (mp, fstype)
    return best[1]


def check_filesystem(root: Root, cfg: Config | None = None) -> list[Finding]:
    fstype = _mount_type(root.path)
    if fstype is None:
        return [Finding("filesystem", "warn", "could not tell the filesystem type")]
    network = fstype in NETWORK_FS or fstype.startswith("fuse.")
    if network and cfg is not None and cfg.watch.leases == "postgres" and cfg.mirror.url:
        return [Finding("filesystem", "ok", f"{fstype} (network: the mirror and the leases "
                        "are in PostgreSQL)")]  # fmt: skip
    if network:
        return [Finding("filesystem", "fail",
                        f"{fstype}: SQLite WAL and atomic renames need a local filesystem",
                        "put the reports root on a local disk")]  # fmt: skip
    return [Finding("filesystem", "ok", f"{fstype} (local)")]


# --- the database --------------------------------------------------------------------------


def check_database(root: Root, grace_s: float) -> list[Finding]:
    """The mirror opens, passes integrity_check and lists what the folders hold; a bundle
    that arrived in the inbox within `grace_s` and is not picked up yet is no drift."""
    import time

    from incidents import mirror

    fleet = target_of(root.db_path).url is not None  # PostgreSQL: check_fleet connects
    if not fleet and not root.db_path.exists():
        return [Finding("database", "warn", "no mirror database yet",
                        f"incidents reindex --root {root.path}")]  # fmt: skip
    if not fleet and read_only(
        root.path
    ):  # SQLite's WAL cannot be opened there; not the database's fault
        return [Finding("database", "warn", "not opened: the root is read-only (status lists "
                        "the folders instead)", "remount the root read-write")]  # fmt: skip
    try:
        conn = mirror.connect(root.db_path)
    except mirror.MirrorUnavailable:
        return []  # check_fleet says it
    except Exception as exc:
        full = _disk_full(exc, root)
        if full is not None:
            return [full]
        return [Finding("database", "fail", f"cannot open: {exc}",
                        f"incidents reindex --root {root.path} (rebuilds it from the folders)")]  # fmt: skip
    try:
        problems = mirror.check_integrity(conn, full=True)
        if problems:
            return [Finding("database", "fail", f"integrity_check: {'; '.join(problems[:3])}",
                            f"incidents reindex --root {root.path}")]  # fmt: skip
        # PostgreSQL keeps its own files whole: check_fleet reports the server
        out = [] if fleet else [Finding("database", "ok", "integrity_check ok")]
        # a capture leaves only a hint for the mirror: fold those in (as the watcher and
        # status do), so that what is left to compare is real drift
        try:
            mirror.catch_up(conn, root)
        except Exception as exc:
            full = _disk_full(exc, root)
            return [*out, full or Finding("mirror", "fail", f"cannot catch up with captures: "
                                          f"{exc}", f"incidents reindex --root {root.path}")]  # fmt: skip
        rows = mirror.incident_buckets(conn)
    finally:
        conn.close()
    folders = folder_buckets(root)
    drift = sorted(i for i in set(rows) | set(folders) if rows.get(i) != folders.get(i))
    now = time.time()
    fresh = [i for i in drift if i not in rows and folders.get(i) == "inbox"
             and changed_within(root.inbox / i, now, grace_s)]  # fmt: skip
    drift = [i for i in drift if i not in fresh]
    if drift:
        sample = ", ".join(f"{i} (db {rows.get(i)}, folder {folders.get(i)})" for i in drift[:3])
        out.append(Finding("mirror", "fail", f"{len(drift)} incident(s) differ: {sample}",
                           f"incidents reindex --root {root.path}"))  # fmt: skip
    else:
        late = f" (and {len(fresh)} new in the inbox, not picked up yet)" if fresh else ""
        out.append(Finding("mirror", "ok", f"{len(rows)} incident(s), same as the folders{late}"))
    return out


def _disk_full(exc: BaseException, root: Root) -> Finding | None:
    """The database cannot be opened or written because the disk is full (or read-only):
    a reindex would fail the same way; room on the disk is the fix, nothing is lost."""
    from incidents.errors import disk_failure, disk_failure_at

    said = disk_failure(exc)
    if said is None:
        found = disk_failure_at(exc, str(root.db_path))
        said = str(found) if found is not None else None
    if said is None:
        return None
    return Finding("database", "fail", f"the disk is full or read-only: {said}",
                   f"free space on the filesystem that holds {root.path} (df -h {root.path}); "
                   "captures and steps fail until then, nothing is lost")  # fmt: skip


def folder_buckets(root: Root) -> dict[str, str]:
    found: dict[str, str] = {}
    for bucket in ("inbox", "resolved", "escalated"):
        folder = root.bucket(bucket)
        if folder.is_dir():
            with os.scandir(folder) as it:  # a link to a folder is no bundle: not followed
                for entry in it:
                    if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
                        found[entry.name] = bucket
    return found


# --- tools -----------------------------------------------------------------------------------


def check_tiers(cfg: Config) -> list[Finding]:
    from incidents.fixers.doctor_tiers import check_tiers as tiers

    return tiers(cfg)


def check_tools(cfg: Config) -> list[Finding]:
    from incidents.checks.engine import which
    from incidents.checks.profiles import resolve_profiles
    from incidents.proc import run

    profiles = resolve_profiles(
        dict(cfg.checks.profiles), hard_ruff_prefixes=cfg.checks.hard_ruff_prefixes,
        only=cfg.checks.tools,
    )  # fmt: skip
    out: list[Finding] = []
    for profile in profiles:
        argv0 = profile.argv[0]
        if "{" in argv0:
            out.append(Finding(f"tool {profile.name}", "ok", f"{argv0} (expanded at run time)"))
            continue
        program = which(argv0)
        if program is None and profile.language == "powershell" and cfg.checks.tools is None:
            continue  # a default nobody chose: PowerShell is checked where pwsh is installed
        if program is None:
            level = "warn" if profile.language == "powershell" else "fail"
            out.append(Finding(f"tool {profile.name}", level, f"program not found: {argv0}",
                               f"install {argv0} (or drop {profile.name!r} from [checks] tools)"))  # fmt: skip
            continue
        argv = [program if a == argv0 else a for a in profile.version_argv] or [
            program,
            "--version",
        ]
        res = run(argv, cwd=Path.cwd(), timeout=20)
        text = (res.stdout_text.strip() or res.stderr_text.strip()).splitlines()
        if res.ok and text:
            out.append(Finding(f"tool {profile.name}", "ok", f"{program}: {text[0][:80]}"))
        else:
            out.append(Finding(f"tool {profile.name}", "fail",
                               f"{program} does not run ({' '.join(argv)} failed)",
                               f"reinstall {argv0}"))  # fmt: skip
    return out


def check_containment(cfg: Config, root: Root) -> list[Finding]:
    """Can fixer programs run under bubblewrap here? A warning when they cannot (they run
    with detection only), a failure when `[tiers] sandbox = "bwrap"` requires it; and a
    warning when, with detection only, the fixers could write the reports root."""
    from incidents.fixers import sandbox

    mode = cfg.tiers.sandbox
    if mode == "none":
        found = [Finding("containment", "warn", '[tiers] sandbox = "none": fixers run with '
                         "detection only (contained: false)",
                         'set [tiers] sandbox = "auto" to use bubblewrap where it works')]  # fmt: skip
        return found + _root_writable(root)
    probe = sandbox.probe()
    if probe.ok:
        return [Finding("containment", "ok", f"fixers run under bubblewrap ({probe.label})")]
    if mode == "bwrap":
        return [Finding("containment", "fail", f"bubblewrap unavailable: {probe.reason}; "
                        '[tiers] sandbox = "bwrap" requires it: every fixer call fails',
                        f'{sandbox.INSTALL_HINT}, or set [tiers] sandbox = "auto"')]  # fmt: skip
    unavailable = Finding("containment", "warn", f"bubblewrap unavailable: {probe.reason}; "
                          "fixers run with detection only (contained: false)",
                          sandbox.INSTALL_HINT)  # fmt: skip
    return [unavailable, *_root_writable(root)]


def _root_writable(root: Root) -> list[Finding]:
    """Fixers run as this uid: with detection only, a root it can write is open to them."""
    if not os.access(root.path, os.W_OK):
        return []
    from incidents.fixers import sandbox

    return [Finding("root-writable", "warn",
                    f"fixers run as uid {os.getuid()}, which can write the reports root "
                    f"{root.path}: with detection only a fixer can write there and read the "
                    "seal key; a change to its own incident's folders fails the attempt "
                    "(tamper), but nothing stops it writing other incidents' folders",
                    f"{sandbox.INSTALL_HINT}: under bubblewrap the root is read-only to "
                    "fixers")]  # fmt: skip


# --- leases, pending closes, pause ------------------------------------------------------------


def check_leases(root: Root) -> list[Finding]:
    from incidents.leases import stale_leases

    stale = stale_leases(root)
    if not stale:
        return [Finding("leases", "ok", "no stale lease")]
    ids = ", ".join(f"{lease.incident_id} (pid {lease.pid})" for lease in stale[:5])
    return [Finding("leases", "warn", f"{len(stale)} lease(s) left by a dead or stuck worker: {ids}",
                    "a running `incidents watch` takes them over by itself; start one")]  # fmt: skip


def check_pending(root: Root) -> list[Finding]:
    pending = root.state / "pending"
    names = [n for n in os.listdir(pending) if not n.startswith(".")] if pending.is_dir() else []
    if names:
        return [Finding("closes", "warn", f"{len(names)} interrupted close(s): {', '.join(names[:5])}",
                        f"incidents status --root {root.path} finishes them")]  # fmt: skip
    return [Finding("closes", "ok", "no interrupted close")]


def check_pause(root: Root) -> list[Finding]:
    from incidents import pause

    info = pause.current(root)
    if info is None:
        return [Finding("pause", "ok", "not paused")]
    return [Finding("pause", "warn", f"paused since {info.since_iso}: {info.reason}",
                    "incidents resume (after looking at error_archive/escalated/)")]  # fmt: skip


def check_seal(root: Root) -> list[Finding]:
    """The key of state.json's seal (`incidents.step.seal`): without a safe one no step runs."""
    from incidents.step.seal import read_key

    path = root.seal_key
    try:
        read_key(path)
    except FileNotFoundError:
        return [Finding("seal", "warn", f"no state.json seal key yet ({path}): a root from "
                        "before the seal", "the next step makes it and seals the incidents "
                        "in flight: incidents watch --once")]  # fmt: skip
    except (IncidentsError, OSError) as exc:
        return [Finding("seal", "fail", str(exc),
                        f"chmod 600 {path}, owned by the user that runs the watcher")]  # fmt: skip
    return [Finding("seal", "ok", "state.json seal key present, owner-only")]
