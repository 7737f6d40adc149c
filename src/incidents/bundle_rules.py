"""What an incident may point at: its workdir, its targets, its verification commands.

One rule set, standard library only, applied twice:
- by capture to the options it is given (a refusal is a `UsageError` naming the option);
- by the step service to every bundle it picks up (`step.documents.load_bundle`): a bundle
  in the inbox may have been written by anyone who can write there, not by capture, so it
  is judged again, and one that breaks a rule goes to `error_rejected/` with a reason
  naming the file, the field and the rule.

The rules:
- workdir: an absolute path; with `[verification] workdirs` set, its realpath lies under
  the realpath of one of them (empty: anywhere but a system folder, `SYSTEM_FOLDERS`
  exactly and everything under `SYSTEM_TREES`);
- target: stored relative to the workdir in canonical form (`os.path.normpath`: no
  `./`, `//` or trailing `/`, so it compares equal to the paths findings carry), with
  no `..` component, and its realpath
  (symlinks followed) lies inside the workdir's realpath; a workdir of `/` contains
  nothing, so it has no targets;
- verification command: it splits with shlex and `incidents.allowlist` allows it (its
  program, its options, every path it names inside the workdir).

A target's existence is capture's own check (a typo is best told at once); at pickup a
target that is gone is the check's business (it reports it), not a question of trust.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

TARGET_FIELDS = ("python_files", "powershell_files")
# Folders no incident works in unless `[verification] workdirs` names them (or a folder
# above them): these exactly (projects live below them: /home/bob/app, /tmp/job, /var/tmp/x,
# /opt/app, /srv/jobs), and these with everything below (the system's programs, its
# configuration and state, root's home: /root/.config, /usr/local/src/app and
# /var/lib/jenkins/workspace are allowed only when named in workdirs).
SYSTEM_FOLDERS = frozenset(
    ("/", "/home", "/tmp", "/var", "/var/tmp", "/opt", "/srv", "/mnt", "/media")
)  # fmt: skip
SYSTEM_TREES = ("/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev",
                "/proc", "/sys", "/run", "/root", "/usr", "/snap", "/lost+found", "/var/lib",
                "/var/log", "/var/cache", "/var/spool", "/var/run", "/var/lock", "/var/mail",
                "/var/backups", "/var/opt", "/var/local")  # fmt: skip


class Problem:
    """One broken rule: the field, the value that breaks it, and the rule, in words."""

    __slots__ = ("field", "value", "rule")

    def __init__(self, field: str, value: str, rule: str) -> None:
        self.field, self.value, self.rule = field, value, rule

    def __str__(self) -> str:
        return f"{self.field} {self.value!r}: {self.rule}"

    def __repr__(self) -> str:
        return f"Problem({self.field!r}, {self.value!r}, {self.rule!r})"


def resolve_target(name: str, base: str) -> tuple[str | None, str]:
    """(`name` relative to the workdir `base`, a realpath, with symlinks followed, "") or
    (None, why it may not be a target)."""
    if not name or "\x00" in name:
        return None, "an empty name or a NUL byte"
    if base == os.sep:
        return None, "the workdir is / (nothing would be contained)"
    full = os.path.realpath(os.path.join(base, name))
    if full == base or os.path.commonpath([base, full]) != base:
        return None, f"outside the workdir {base} (symlinks followed)"
    return os.path.relpath(full, base), ""


def target_problem(name: str, base: str) -> str | None:
    """Why a target as a bundle stores it may not be used under the workdir `base` (a
    realpath), or None. Capture stores each relative, without `..`."""
    if os.path.isabs(name) or name.startswith(("/", "\\")):
        return "an absolute path (a target is stored relative to the workdir)"
    if ".." in name.replace("\\", "/").split("/"):
        return "a '..' component (a target is stored relative to the workdir, without '..')"
    canonical = os.path.normpath(name)
    if canonical != name:
        return f"not in canonical form (a target is stored as capture writes it: {canonical!r})"
    return resolve_target(name, base)[1] or None


def workdirs_problem(entries: Sequence[str]) -> str | None:
    """Why `[verification] workdirs` is not a list of absolute folder paths, or None."""
    for entry in entries:
        if not entry.strip():
            return "an empty path"
        if not os.path.isabs(os.path.expanduser(entry)):
            return f"{entry!r}: must be an absolute path"
    return None


def system_folder(real: str) -> bool:
    """`real` (a realpath) is the system's: one of `SYSTEM_FOLDERS` or under one of
    `SYSTEM_TREES`. Its files would become targets a fixer may edit."""
    if real in SYSTEM_FOLDERS:
        return True
    return any(real == tree or real.startswith(tree + "/") for tree in SYSTEM_TREES)


def workdir_problem(workdir: str, allowed: Sequence[str]) -> str | None:
    """Why an incident may not work in `workdir`, or None. `allowed`: `[verification]
    workdirs` (empty: anywhere but a system folder; a folder named there is allowed even
    when it is a system folder)."""
    if not workdir or not os.path.isabs(workdir):
        return "not an absolute path"
    try:
        real = os.path.realpath(workdir)
    except OSError as exc:  # a link that may not be followed (/proc/1/root/...)
        return f"cannot be resolved: {exc.strerror or exc}"
    if not allowed:
        if system_folder(real):
            return "a system folder (name it in [verification] workdirs to allow it)"
        return None
    for entry in allowed:
        folder = os.path.realpath(os.path.expanduser(entry))
        if os.path.commonpath([folder, real]) == folder:
            return None
    return f"outside [verification] workdirs ({', '.join(allowed)})"


def command_problems(commands: Sequence[str], allow: Sequence[str], workdir: str) -> list[Problem]:
    """Each verification command that may not run, with why (`incidents.allowlist`).
    `allow`: the programs `[verification] allow` adds."""
    if not commands:
        return []
    from pathlib import Path

    from incidents.allowlist import check_allowed

    return [
        Problem("verify", r.command, r.reason)
        for r in check_allowed(commands, allow, Path(workdir))
    ]


def bundle_problems(
    workdir: str,
    targets: Mapping[str, Sequence[str]],
    commands: Sequence[str],
    *,
    allow: Sequence[str],
    workdirs: Sequence[str],
) -> list[Problem]:
    """Every rule an incident breaks: its `workdir` (the one it works in), its `targets`
    (field -> stored names) and its verification `commands`."""
    problem = workdir_problem(workdir, workdirs)
    if problem is not None:
        return [Problem("workdir", workdir, problem)]  # nothing else can be judged
    base = os.path.realpath(workdir)
    out = [
        Problem(field, name, problem)
        for field, names in targets.items()
        for name in names
        if (problem := target_problem(name, base)) is not None
    ]
    return out + command_problems(commands, allow, workdir)
