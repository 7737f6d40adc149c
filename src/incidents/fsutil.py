"""Durable, symlink-safe filesystem primitives (stdlib only: on the capture path).

Every file that matters is written old-or-new: a temp file in the same directory,
fsync, `os.replace`, fsync of the directory. Bundle files are read without following
symlinks and only when they are regular files with one link and under a size cap.
"""

from __future__ import annotations

import json
import os
import stat

from incidents.errors import InvalidDocument, UnsafeFile

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    import re
    from typing import Any

JSON_MAX_BYTES = 1 << 20
JSON_MAX_DEPTH = 64
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new_file(
    path: str | os.PathLike[str], data: bytes, mode: int = 0o600, durable: bool = True
) -> None:
    """Create `path` (which must not exist), write `data` and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
    try:
        _write_all(fd, path, data)
        if durable:
            _fsync(fd, path)
    finally:
        os.close(fd)


def write_new_files(folder: str, files: dict[str, bytes], mode: int = 0o600) -> None:
    """Create each of `files` (name -> data) in `folder`, none of which may exist, and
    fsync them all, then the folder: as durable as `write_new_file` for each and
    `fsync_dir`, in less time, because every file is written before the first fsync. (On
    ext4 the first fsync commits one journal transaction that holds them all, so the rest
    find little left to do: 6 files took 7.5 ms instead of 14 ms on this project's disk.)"""
    opened: list[tuple[int, str]] = []
    try:
        for name, data in files.items():
            path = os.path.join(folder, name)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
            opened.append((os.open(path, flags, mode), path))
            _write_all(opened[-1][0], path, data)
        for fd, path in opened:
            _fsync(fd, path)
    finally:
        for fd, _ in opened:
            os.close(fd)
    fsync_dir(folder)


def _write_all(fd: int, path: str | os.PathLike[str], data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:  # os.write and os.fsync name no file: say which (a full disk)
        _name(exc, path)
        raise


def _fsync(fd: int, path: str | os.PathLike[str]) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:
        _name(exc, path)
        raise


def _name(exc: OSError, path: str | os.PathLike[str]) -> None:
    if exc.filename is None:
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from exc


def publish_new_file(path: str | os.PathLike[str], data: bytes, mode: int = 0o600) -> bool:
    """Create `path` holding `data`, whole and durable, unless it exists (then False, and
    the existing file is left alone). Written and fsynced under a temp name, then
    hard-linked into place: a link, unlike a rename, never replaces, so there is only ever
    one, and no reader sees it partly written."""
    p = os.fspath(path)
    directory, name = os.path.split(p)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    write_new_file(tmp, data, mode)
    try:
        os.link(tmp, p)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    fsync_dir(directory or ".")
    return True


def discard(path: str | os.PathLike[str]) -> None:
    """Remove `path` if it is there (`contextlib.suppress` costs an import on the capture
    path)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return


def _replace(path: str | os.PathLike[str], data: bytes, mode: int, sync_file: bool) -> str:
    """Temp file in the same folder (fsynced when `sync_file`), renamed over `path`;
    returns the folder (whose fsync, when wanted, is the caller's)."""
    p = os.fspath(path)
    directory, name = os.path.split(p)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        write_new_file(tmp, data, mode, sync_file)
        os.replace(tmp, p)
    except BaseException:
        discard(tmp)
        raise
    return directory or "."


def atomic_write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    mode: int = 0o600,
    durable: bool = True,
    *,
    sync_dir: bool = True,
) -> None:
    """Replace `path` with `data` so that a crash leaves the old or the new file.
    `durable=False` (for hints that can be rebuilt) skips the fsyncs, never the rename.
    `sync_dir=False` fsyncs the file (so it is old-or-new even after a power cut) but
    leaves the folder's fsync, which makes the new name durable, to the caller."""
    directory = _replace(path, data, mode, durable)
    if durable and sync_dir:
        fsync_dir(directory)


def atomic_replace_files(
    directory: str | os.PathLike[str], files: list[tuple[str, bytes]], *, sync_dir: bool = True
) -> None:
    """`atomic_write_bytes` for several files of one folder, in order, with one fsync of
    the folder at the end instead of one per file: each file is fsynced before its
    rename, so each is old-or-new, and a crash between two leaves a prefix replaced.
    `sync_dir=False` leaves the folder's fsync to a caller that commits in it next."""
    for name, data in files:
        _replace(os.path.join(directory, name), data, 0o600, True)
    if sync_dir:
        fsync_dir(directory)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def dump_json(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def dump_model(model: Any) -> bytes:
    """A pydantic model's JSON form laid out as `dump_json` lays it out (the same bytes but
    for how floats below 1e-4 spell their exponent), serialized by pydantic itself: json's
    indenting encoder is pure Python, and state.json went through it on every commit."""
    return (str(model.model_dump_json(indent=2)) + "\n").encode("utf-8")


def atomic_write_json(path: str | os.PathLike[str], doc: Any) -> None:
    atomic_write_bytes(path, dump_json(doc))


def read_regular_file(path: str | os.PathLike[str], max_bytes: int = JSON_MAX_BYTES) -> bytes:
    """Read a bundle file: no symlinks, no FIFOs or devices, no hard links, bounded size."""
    p = os.fspath(path)
    try:
        fd = os.open(p, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(p):
            raise UnsafeFile(p, "is a symbolic link") from exc
        raise UnsafeFile(p, f"cannot be opened: {exc.strerror}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(p, "is not a regular file")
        if st.st_nlink > 1:
            raise UnsafeFile(p, f"has {st.st_nlink} hard links")
        if st.st_size > max_bytes:
            raise UnsafeFile(p, f"is {st.st_size} bytes, over the cap of {max_bytes}")
        chunks: list[bytes] = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise UnsafeFile(p, f"grew over the cap of {max_bytes} bytes")
        return data
    finally:
        os.close(fd)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def within_depth(doc: Any, limit: int) -> bool:
    """Whether no list or object in `doc` is nested deeper than `limit`."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return False
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return True


def _lone_surrogate(doc: Any) -> bool:
    """Whether a string of `doc` holds a lone surrogate (`"\\udc80"` parses, but is no
    Unicode text: it cannot be written as UTF-8, to a database or a terminal)."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if not node.isascii():
                try:
                    node.encode("utf-8")
                except UnicodeEncodeError:
                    return True
        elif isinstance(node, dict):
            stack.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def parse_json_strict(data: bytes, where: str, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """Parse untrusted JSON: UTF-8 only, no NaN/Infinity, no duplicate keys, bounded depth."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDocument(where, f"not UTF-8 (byte {exc.start})") from exc
    # A cheap guard before json recursion: nesting brackets can't exceed the depth cap
    # by more than the parser's own recursion allows.
    try:
        doc = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except RecursionError as exc:
        raise InvalidDocument(where, f"nested deeper than {max_depth}") from exc
    except ValueError as exc:
        raise InvalidDocument(where, f"not valid JSON: {exc}") from exc
    if not within_depth(doc, max_depth):
        raise InvalidDocument(where, f"nested deeper than {max_depth}")
    if _lone_surrogate(doc):
        raise InvalidDocument(where, "a string holds a lone surrogate (not Unicode text)")
    return doc


def read_json(path: str | os.PathLike[str], max_bytes: int = JSON_MAX_BYTES) -> Any:
    return parse_json_strict(read_regular_file(path, max_bytes), os.fspath(path))


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any]:
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise InvalidDocument(os.fspath(path), f"expected a JSON object, got {type(doc).__name__}")
    return doc


def tail_bytes(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The last `max_bytes` of a file (a log); reads no more than that."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - max_bytes))
        return fh.read(max_bytes)


def ensure_dir(path: str | os.PathLike[str], mode: int = 0o700) -> None:
    """`mkdir -p` where every folder created, the missing parents included, gets `mode`
    whatever the umask (`Path.mkdir(parents=True)` gives the parents the umask's mode: an
    `error_archive/` of 0755). Folders that exist are left as they are."""
    missing = []
    p = os.path.abspath(os.fspath(path))
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise
            continue  # made meanwhile by another process: its mode is its maker's
        os.chmod(folder, mode)  # a umask such as 0277 would leave it unusable


_temp_name_re: re.Pattern[str] | None = None


def atomic_temp_pid(name: str) -> int | None:
    """The writer's pid when `name` is the temp file of an `atomic_write_bytes`
    (`.NAME.PID.HEX.tmp`), else None."""
    global _temp_name_re
    if _temp_name_re is None:
        import re

        _temp_name_re = re.compile(r"\..+\.(\d+)\.[0-9a-f]{8}\.tmp")
    m = _temp_name_re.fullmatch(name)
    return None if m is None else int(m.group(1))


def remove_orphan_temps(directory: str | os.PathLike[str]) -> list[str]:
    """Remove the temp files of atomic writes whose writer died (`.NAME.PID.HEX.tmp` with a
    PID that is no longer alive). They are never data: the file they were replacing is
    intact. Temp files of live processes are left alone."""
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for name in names:
        pid = atomic_temp_pid(name)
        if pid is None or pid_alive(pid):
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except FileNotFoundError:
            continue
        removed.append(name)
    return removed


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (PermissionError: it does)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: past any real pid
        return False
    except PermissionError:
        return True
    return True
