"""One door to subprocesses: `run(argv, ...) -> ProcResult`.

A missing program, a timeout or an OS error is a failed result, never an exception.
Commands are argv lists (never a shell); output is captured and capped; the child gets
its own process group so a timeout kills everything it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from incidents.fsutil import atomic_write_bytes

DEFAULT_OUTPUT_CAP = 4 << 20


@dataclass(frozen=True)
class ProcResult:
    argv: list[str]
    returncode: int | None  # None: it never ran to an exit (missing, timeout, OS error)
    stdout: bytes = b""
    stderr: bytes = b""
    duration_s: float = 0.0
    timed_out: bool = False
    error: str | None = None  # why it did not run or finish, in words
    truncated: bool = field(default=False)
    stopped: str | None = None  # why `stop_when` ended it early (the output said enough)

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")


def _cap(data: bytes, cap: int) -> tuple[bytes, bool]:
    if len(data) <= cap:
        return data, False
    return data[-cap:], True


_PR_SET_PDEATHSIG = 1
_prctl: list[Callable[..., int] | None] = []  # looked up once, before any fork


def _death_request() -> Callable[[], None] | None:
    """A `preexec_fn` that asks the kernel to SIGKILL the child when the thread that
    started it ends (`prctl(PR_SET_PDEATHSIG)`, Linux; None elsewhere). `run` waits for
    its child in the thread that started it, so that is: when this process dies, even
    by SIGKILL (a watcher's worker killed with its watcher), its checks and fixers die
    with it instead of running on to their own timeouts. Only the command itself is
    asked: what it starts in turn is in its process group, which `kill_running` and the
    timeout kill. The function is looked up here, before the fork: the child only calls
    it (no import, no lookup, no lock between fork and exec)."""
    if not _prctl:
        try:
            import ctypes

            _prctl.append(ctypes.CDLL(None, use_errno=True).prctl)
        except (OSError, AttributeError):
            _prctl.append(None)
    prctl = _prctl[0]
    if prctl is None:
        return None

    def request() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return request


# Every command running now: a watcher told to stop at once kills their process groups
# (each runs in its own session, so nothing else would reach them).
_RUNNING: set[subprocess.Popen[bytes]] = set()


def kill_running() -> None:
    """Kill the process group of every command this process is running (stop-now path)."""
    for proc in list(_RUNNING):
        _kill_group(proc)


def _start_time(pid: int) -> str | None:
    """The kernel's start time of a running `pid` (Linux), which tells a reused pid from
    the old one; None when there is no such process or it is only a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[19] if len(fields) > 19 and fields[0] != "Z" else None


DESCENDANTS_SUFFIX = ".descendants"


def descendants_file(pidfile: str | os.PathLike[str]) -> str:
    """Where a run's watcher lists the processes the recorded one started outside its
    process group (`setsid`, a daemon), for `kill_recorded` (`fixers.guard.Reaper`)."""
    return os.fspath(pidfile) + DESCENDANTS_SUFFIX


def record_descendants(pidfile: str | os.PathLike[str], pids: Sequence[int]) -> None:
    """Write `pids` (with their start times) as the descendants of `pidfile`'s process."""
    lines = "".join(f"{pid} {start}\n" for pid in pids if (start := _start_time(pid)))
    atomic_write_bytes(descendants_file(pidfile), lines.encode("ascii"), durable=False)


def _read_record(path: str | os.PathLike[str]) -> list[tuple[int, str]]:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read()
    except (OSError, ValueError):
        return []
    out: list[tuple[int, str]] = []
    for line in text.splitlines():
        pid_text, _, started = line.strip().partition(" ")
        if pid_text.isdigit() and int(pid_text) > 1 and started:
            out.append((int(pid_text), started))
    return out


def kill_recorded(pidfile: str | os.PathLike[str], wait_s: float = 10.0) -> bool:
    """Kill the process group a `run(..., pidfile=)` of a killed process left running, and
    every descendant listed beside it (`descendants_file`: those it started in a session
    or group of their own) with their groups; a record whose start time no longer matches
    (a reused pid) is left alone. Wait for them to go, and forget the records. True when
    something was killed."""
    extra = descendants_file(pidfile)
    recorded = _read_record(pidfile)[:1] + _read_record(extra)
    killed = False
    live = [(pid, started) for pid, started in recorded if _start_time(pid) == started]
    for pid, _ in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # when it leads a group: all of it
            killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed = True
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and any(_start_time(p) == s for p, s in live):
        time.sleep(0.02)  # an orphan is reaped by init; until then it still holds files
    for path in (pidfile, extra):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return killed


def run(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    output_cap: int = DEFAULT_OUTPUT_CAP,
    pidfile: str | os.PathLike[str] | None = None,
    while_running: Callable[[], None] | None = None,
    stop_when: Callable[[bytes], str | None] | None = None,
) -> ProcResult:
    """Run `argv` to its end. `pidfile`: record the child's pid and start time there while
    it runs, so that if this process is killed the next one can `kill_recorded` it.
    `while_running`: work of ours done once the child has started, instead of waiting
    idle for it (its output is read afterwards; if it raises, the child is killed).
    `stop_when`: called with each new piece of output (stdout and stderr alike) as it
    comes; a non-empty answer ends the command at once (its process group is killed) and
    is kept as `stopped` — for a program that retries an error it has already told us
    about (aider's own retries of a rate limit run for over a minute, then exit 0)."""
    args = [os.fspath(a) for a in argv]
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_death_request(),  # see there: no lock between fork and exec
        )
    except FileNotFoundError:
        return ProcResult(args, None, error=f"program not found: {args[0]}")
    except PermissionError:
        return ProcResult(args, None, error=f"program not executable: {args[0]}")
    except OSError as exc:
        return ProcResult(args, None, error=f"cannot run {args[0]}: {exc.strerror or exc}")
    _RUNNING.add(proc)
    try:
        if pidfile is not None:
            _record(pidfile, proc.pid)
        if while_running is not None:
            try:
                while_running()
            except BaseException:
                _kill_group(proc)
                proc.wait()
                raise
        if stop_when is not None:
            return _watch(proc, args, start, timeout, stdin, output_cap, stop_when)
        return _finish(proc, args, start, timeout, stdin, output_cap)
    finally:
        _RUNNING.discard(proc)
        if pidfile is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(pidfile)


def _record(pidfile: str | os.PathLike[str], pid: int) -> None:
    record = f"{pid} {_start_time(pid) or ''}\n".encode("ascii")
    atomic_write_bytes(pidfile, record, durable=False)  # a crash-time hint, rebuilt per run


def _finish(
    proc: subprocess.Popen[bytes],
    args: list[str],
    start: float,
    timeout: float | None,
    stdin: bytes | None,
    output_cap: int,
) -> ProcResult:
    try:
        out, err = proc.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        out, t1 = _cap(out, output_cap)
        err, t2 = _cap(err, output_cap)
        return ProcResult(
            args,
            None,
            out,
            err,
            time.monotonic() - start,
            timed_out=True,
            error=f"timed out after {timeout:g}s",
            truncated=t1 or t2,
        )
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    out, t1 = _cap(out, output_cap)
    err, t2 = _cap(err, output_cap)
    return ProcResult(args, proc.returncode, out, err, time.monotonic() - start, truncated=t1 or t2)


def _feed(proc: subprocess.Popen[bytes], data: bytes | None) -> None:
    """Write `data` to the child's stdin and close it (a thread: the child may not read)."""
    import threading

    if proc.stdin is None:
        return

    def write() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(OSError):
            proc.stdin.write(data or b"")
        with contextlib.suppress(OSError):
            proc.stdin.close()

    threading.Thread(target=write, daemon=True).start()


def _watch(
    proc: subprocess.Popen[bytes],
    args: list[str],
    start: float,
    timeout: float | None,
    stdin: bytes | None,
    output_cap: int,
    stop_when: Callable[[bytes], str | None],
) -> ProcResult:
    """`_finish`, reading the output as it comes and asking `stop_when` about each piece."""
    import selectors

    assert proc.stdout is not None and proc.stderr is not None
    _feed(proc, stdin)
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    kept: dict[int, bytearray] = {out_fd: bytearray(), err_fd: bytearray()}
    stopped, timed_out = None, False
    deadline = None if timeout is None else start + timeout
    try:
        with selectors.DefaultSelector() as sel:
            for fd in kept:
                sel.register(fd, selectors.EVENT_READ)
            while sel.get_map() and stopped is None:
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(wait):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fd)
                        continue
                    buf = kept[key.fd]
                    buf += chunk
                    if len(buf) > 2 * output_cap:
                        del buf[: len(buf) - output_cap]
                    stopped = stop_when(chunk) or None
                    if stopped:
                        break
        if stopped is not None or timed_out:
            _kill_group(proc)
        proc.wait()
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        proc.stdout.close()
        proc.stderr.close()
    out, t1 = _cap(bytes(kept[out_fd]), output_cap)
    err, t2 = _cap(bytes(kept[err_fd]), output_cap)
    return ProcResult(
        args,
        None if timed_out else proc.returncode,
        out,
        err,
        time.monotonic() - start,
        timed_out=timed_out,
        error=f"timed out after {timeout:g}s" if timed_out else None,
        truncated=t1 or t2,
        stopped=stopped,
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def minimal_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A small environment for commands taken from bundles: PATH, HOME, locale, TMP."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV", "SYSTEMROOT", "TERM")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.setdefault("PATH", os.defpath)
    if extra:
        env.update(extra)
    return env


@dataclass(frozen=True)
class TeeResult:
    returncode: int | None
    tail: bytes
    duration_s: float
    timed_out: bool = False
    error: str | None = None

    @property
    def exit_status(self) -> int:
        """What a shell would report: the code, 128+signal, 124 on timeout, 127 when missing."""
        if self.timed_out:
            return 124
        if self.returncode is None:
            return 127
        return 128 - self.returncode if self.returncode < 0 else self.returncode


def run_tee(
    argv: Sequence[str],
    *,
    timeout: float | None = None,
    tail_bytes: int = 65536,
    cwd: str | None = None,
) -> TeeResult:
    """Run `argv`, passing its stdout/stderr through live, keeping a bounded combined tail.

    Signals that stop us (INT, TERM, HUP) are forwarded to the command's process group.
    """
    import selectors
    import sys

    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        reason = "not found" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc)
        return TeeResult(None, f"{argv[0]}: {reason}\n".encode(), 0.0, error=str(reason))

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signum)

    previous = {
        s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    tail = bytearray()
    assert proc.stdout is not None and proc.stderr is not None  # both are pipes
    sinks = {proc.stdout.fileno(): sys.stdout.buffer, proc.stderr.fileno(): sys.stderr.buffer}
    timed_out = False
    try:
        with selectors.DefaultSelector() as sel:
            for fd in sinks:
                sel.register(fd, selectors.EVENT_READ)
            deadline = None if timeout is None else start + timeout
            while sel.get_map():
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                if wait == 0.0:
                    timed_out = True
                    _kill_group(proc)
                    break
                for key, _ in sel.select(wait):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    sink = sinks[key.fd]
                    sink.write(chunk)
                    sink.flush()
                    tail += chunk
                    if len(tail) > 2 * tail_bytes:
                        del tail[: len(tail) - tail_bytes]
        proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        proc.stdout.close()
        proc.stderr.close()
    return TeeResult(
        None if timed_out else proc.returncode,
        bytes(tail[-tail_bytes:]),
        time.monotonic() - start,
        timed_out=timed_out,
        error=f"timed out after {timeout:g}s" if timed_out and timeout else None,
    )
