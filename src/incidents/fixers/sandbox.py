"""Containing a fixer program: bubblewrap when it can run here, else detection.

Under bubblewrap (`bwrap`, Debian package `bubblewrap`) the program sees the whole
filesystem read-only (`--ro-bind / /`), a fresh `/dev` and `/proc`, a private tmpfs on
`/tmp` (writes there vanish with the run; TMPDIR points there), and read-write only the
incident's workdir and the tier's `writable` paths; the reports root and the config file
in use (and the workdir's `.git`: the repository's history is not the fixer's to edit)
are bound read-only again last, so neither can be made writable by a workdir or a
`writable` entry above them, and the root's `.state` (the seal key) is hidden under an
empty read-only tmpfs. `--unshare-pid` gives it a private PID namespace: when the
program exits, every process it started (same group, `setsid`, double fork) is killed by
the kernel; `--die-with-parent` ends it if we die; `--new-session` keeps it off our
terminal; `--cap-drop ALL` leaves a program run as root no capability (none to remount
`/` read-write, to mount, to trace or to bypass file permissions). The network stays:
the AI CLIs need it. What `/tmp` held outside is hidden, so
the folders the program needs from there (PATH entries, the prompt file, VIRTUAL_ENV)
are bound back read-only.

Whether bubblewrap works is probed once per process (`probe`): the binary must be on PATH
and able to create the namespaces (an unprivileged container may refuse them). The tier
setting `[tiers] sandbox` decides what happens when it cannot: `"auto"` falls back to
detection (`incidents.fixers.guard`), `"bwrap"` makes the attempt an infrastructure
failure naming the reason, `"none"` never uses it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from incidents import proc

# The namespace and mount flags, shared by the probe and the real run.
# `--cap-drop ALL`: run as root (a service account often is), bubblewrap would otherwise
# leave the program every capability, and CAP_SYS_ADMIN remounts `/` read-write.
NAMESPACE_FLAGS = ("--unshare-pid", "--die-with-parent", "--new-session", "--cap-drop", "ALL")
BASE_MOUNTS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
PRIVATE_TMP = "/tmp"
PROBE_TIMEOUT_S = 10.0
_VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")
INSTALL_HINT = "install the Debian/Ubuntu package `bubblewrap` (apt-get install bubblewrap)"


@dataclass(frozen=True)
class Probe:
    """Can bubblewrap confine a program here? `program`/`version` when it can, else `reason`."""

    program: str | None
    version: str | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.program is not None and self.reason is None

    @property
    def label(self) -> str:
        return f"bwrap {self.version}" if self.version else "bwrap"


_PROBES: dict[str, Probe] = {}


def probe(path: str | None = None) -> Probe:
    """Find `bwrap` (on `path`, else PATH) and run `true` under the same flags a fixer gets;
    the answer is kept for the life of the process."""
    program = shutil.which("bwrap", path=path)
    if program is None:
        return Probe(None, reason=f"bwrap not found on PATH ({INSTALL_HINT})")
    cached = _PROBES.get(program)
    if cached is not None:
        return cached
    true = shutil.which("true") or "/bin/true"
    result = proc.run(
        [program, *BASE_MOUNTS, *NAMESPACE_FLAGS, "--", true],
        timeout=PROBE_TIMEOUT_S, env=proc.minimal_env(),
    )  # fmt: skip
    if result.ok:
        version = proc.run([program, "--version"], timeout=PROBE_TIMEOUT_S)
        words = version.stdout_text.split()
        found = Probe(program, words[-1] if version.ok and words else None)
    else:
        lines = result.stderr_text.strip().splitlines()
        why = result.error or (lines[-1] if lines else f"exit {result.returncode}")
        found = Probe(None, reason=f"{program} cannot create its namespaces here: {why}")
    _PROBES[program] = found
    return found


def expand(entries: Iterable[str], env: Mapping[str, str] | None = None) -> list[str]:
    """`writable` entries as absolute paths: `~`, `$VAR`, `${VAR}` and `${VAR:-default}`
    expanded (the default when VAR is unset or empty); an entry naming a variable that is
    not set and has no default is left out (it names nothing)."""
    values = os.environ if env is None else env

    def value(m: re.Match[str]) -> str | None:
        name = m.group(1) or m.group(3)
        found = values.get(name)
        return found if found else m.group(2)  # None: unset and no default

    out: list[str] = []
    for entry in entries:
        if not entry or any(value(m) is None for m in _VAR.finditer(entry)):
            continue  # a variable that is not set names nothing
        text = _VAR.sub(lambda m: os.path.expanduser(value(m) or ""), entry)
        path = os.path.abspath(os.path.expanduser(text))
        if path not in out:
            out.append(path)
    return out


def create_missing(paths: Iterable[str]) -> list[str]:
    """Create each missing `writable` path before the sandbox binds it (a bind of a missing
    path is skipped, and the CLI then fails read-only): a name with a suffix as a 0600
    file (a `.json` one holding `{}`: claude refuses an empty ~/.claude.json as corrupt),
    anything else as a 0700 folder, parents 0700. Returns what could not be, with why."""
    failed: list[str] = []
    for path in paths:
        if os.path.lexists(path):
            continue
        try:
            if os.path.splitext(path)[1]:
                os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    os.write(fd, b"{}\n" if path.endswith(".json") else b"")
                finally:
                    os.close(fd)
            else:
                os.makedirs(path, mode=0o700, exist_ok=True)
        except FileExistsError:
            continue  # made by someone else meanwhile: there it is
        except OSError as exc:
            failed.append(f"{path}: {exc.strerror or exc}")
    return failed


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def hidden_by_tmp(paths: Iterable[str]) -> list[str]:
    """Which of `paths` (files or folders) the private /tmp would hide; each as it really is."""
    tmp = os.path.realpath(PRIVATE_TMP)
    out: list[str] = []
    for path in paths:
        real = os.path.realpath(path)
        if path and _under(real, tmp) and real != tmp and real not in out:
            out.append(real)
    return out


def program_paths(program: str) -> list[str]:
    """What must be visible for `program` to start: the folder of every link on the way
    to the real file (a chain such as node_modules/.bin/codex -> ../@openai/codex/bin/
    codex.js), the real file, and its package root — the `node_modules` folder around it,
    where an npm wrapper finds its platform package (@openai/codex-linux-x64)."""
    out: list[str] = []
    path = os.path.abspath(program)
    for _ in range(40):  # the kernel's own limit on a chain of links
        out.append(os.path.realpath(os.path.dirname(path)))  # the folder holding this step
        if not os.path.islink(path):
            break
        path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
    real = os.path.realpath(program)
    out.append(real)
    parts = real.split(os.sep)
    if "node_modules" in parts:
        top = len(parts) - 1 - parts[::-1].index("node_modules")
        out.append(os.sep.join(parts[: top + 1]))
    return list(dict.fromkeys(out))


_EXECVP = re.compile(r"^bwrap: execvp (.+?): (.+)$", re.M)


def cannot_show(stderr: str) -> str | None:
    """bubblewrap's own complaint that the program it was to start is not there (a path the
    sandbox does not show), as one line naming it; None for anything else."""
    m = _EXECVP.search(stderr)
    if m is None:
        return None
    return (
        f"the sandbox cannot show the program {m.group(1)} ({m.group(2)}): it or what it "
        "needs lies where bubblewrap hides it (a private /tmp); install it elsewhere"
    )


def wrap(
    probe_: Probe,
    argv: Sequence[str],
    workdir: str,
    *,
    writable: Sequence[str] = (),
    read_only: Sequence[str] = (),
    visible: Sequence[str] = (),
    hidden: Sequence[str] = (),
) -> list[str]:
    """The bwrap command running `argv` in `workdir`: see the module docstring. `visible`:
    paths under /tmp the program needs to read; `read_only`: paths that must stay
    read-only even under the workdir or a `writable` path (bound last)."""
    assert probe_.program is not None
    real = os.path.realpath(workdir)
    cmd = [probe_.program, *BASE_MOUNTS]
    for path in hidden_by_tmp(visible):
        cmd += ["--ro-bind-try", path, path]
    # A later mount on a folder hides earlier ones below it: outer folders first, and a
    # read-only path after a writable one at the same place.
    binds = [(real, "--bind"), *((os.path.realpath(p), "--bind-try") for p in writable)]
    binds += [(os.path.realpath(p), "--ro-bind-try") for p in read_only]
    binds.sort(key=lambda b: (b[0].rstrip("/").count("/"), b[1] == "--ro-bind-try"))
    for path, flag in binds:
        cmd += [flag, path, path]
    for path in hidden:  # an empty read-only folder over it (the seal key's folder)
        if os.path.isdir(path):
            cmd += ["--tmpfs", os.path.realpath(path), "--remount-ro", os.path.realpath(path)]
    cmd += [*NAMESPACE_FLAGS, "--chdir", real, "--", *argv]
    return cmd


@dataclass(frozen=True)
class Containment:
    """How one fixer run is contained. `mode`: the `[tiers] sandbox` setting; `protect`:
    paths bound read-only under bubblewrap, whatever is writable around them (the reports
    root, the config file in use); `watch`: files outside the workdir hashed before and
    after a detection-mode run and put back when changed (the config file in use; under
    bubblewrap it is read-only anyway); `watch_root`: this incident's folders of the
    reports root and the seal key, compared before and after a detection-mode run
    (`fixers.rootwatch`: any change fails the attempt); `hide`: folders the fixer must not
    even read under bubblewrap (the reports root's `.state`, with the seal key); `aside`:
    where what a fixer left or changed outside the workdir is moved, never deleted (None:
    it is reported and left)."""

    mode: str = "auto"
    protect: tuple[str, ...] = ()
    watch: tuple[str, ...] = ()
    watch_root: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    aside: str | None = None


def choose(mode: str) -> tuple[Probe | None, str | None]:
    """(the bwrap to use or None for detection, an infrastructure error or None)."""
    if mode == "none":
        return None, None
    found = probe()
    if found.ok:
        return found, None
    if mode == "bwrap":
        return None, f'[tiers] sandbox = "bwrap" but bubblewrap cannot run: {found.reason}'
    return None, None
