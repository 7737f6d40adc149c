"""The agent skills shipped with incidents, and their installation where agents look.

A skill is a folder holding a `SKILL.md`: YAML front matter with `name` and
`description`, then instructions (the Agent Skills format read by Claude Code and other
agents). Ours, `error-plan` and `error-exec-loop`, are package data under
`incidents/skills/` (the checkout's `skills/` points there), so a `pip install` has
them. `install` copies them into a skills folder (`.claude/skills/` of a project,
`~/.claude/skills/` of a user): it checks every destination before it writes anything,
writes each file atomically, and never replaces a skill that differs from ours (edited
by someone, or of another version) unless forced.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

from incidents import fsutil
from incidents.errors import InvalidDocument, NotFound, UsageError

NAMES = ("error-plan", "error-exec-loop")
SKILL_FILE = "SKILL.md"
PROJECT_DIR = Path(".claude") / "skills"  # where Claude Code looks in a project
NAME_MAX, DESCRIPTION_MAX = 64, 1024  # the Agent Skills format's limits
_NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# skills are instructions, not secrets: readable like any documentation (git keeps no more)
FILE_MODE, DIR_MODE = 0o644, 0o755

Action = Literal["installed", "unchanged", "replaced"]


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    files: dict[str, bytes]  # path inside the skill's folder -> content

    @property
    def text(self) -> str:
        return self.files[SKILL_FILE].decode("utf-8")


@dataclass(frozen=True)
class Installed:
    name: str
    path: Path  # the skill's SKILL.md at the destination
    action: Action


def user_dir() -> Path:
    """Where Claude Code looks for a user's own skills."""
    return Path.home() / ".claude" / "skills"


def front_matter(text: str, where: str) -> dict[str, str]:
    """The `key: value` lines between the opening `---` and the next one."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise InvalidDocument(where, "does not start with a '---' front matter block")
    try:
        end = lines.index("---", 1)
    except ValueError:
        raise InvalidDocument(where, "its front matter is not closed by a '---' line") from None
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or key != key.strip():
            raise InvalidDocument(where, f"front matter line {line!r} is not 'key: value'")
        fields[key] = value.strip()
    return fields


def check_front_matter(fields: dict[str, str], folder: str, where: str) -> tuple[str, str]:
    """`name` and `description` as the format requires; returns them."""
    name, description = fields.get("name", ""), fields.get("description", "")
    if not _NAME_RE.match(name) or len(name) > NAME_MAX:
        raise InvalidDocument(where, f"{name!r}: lowercase letters, digits, single hyphens", "name")
    if name != folder:
        raise InvalidDocument(where, f"{name!r} is not its folder's name {folder!r}", "name")
    if not description or len(description) > DESCRIPTION_MAX:
        raise InvalidDocument(where, f"must have 1 to {DESCRIPTION_MAX} characters", "description")
    return name, description


def _files(folder: Traversable, prefix: str = "") -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.startswith((".", "__")):
            continue
        if entry.is_dir():
            found.update(_files(entry, f"{prefix}{entry.name}/"))
        else:
            found[prefix + entry.name] = entry.read_bytes()
    return found


def shipped() -> list[Skill]:
    """The skills this installation of incidents carries, in NAMES order."""
    base = resources.files("incidents").joinpath("skills")
    skills = []
    for name in NAMES:
        files = _files(base.joinpath(name))
        where = f"incidents/skills/{name}/{SKILL_FILE}"
        if SKILL_FILE not in files:
            raise NotFound(f"{where} is missing from this installation of incidents")
        fields = front_matter(files[SKILL_FILE].decode("utf-8"), where)
        _, description = check_front_matter(fields, name, where)
        skills.append(Skill(name, description, files))
    return skills


def get(name: str) -> Skill:
    for skill in shipped():
        if skill.name == name:
            return skill
    raise UsageError(f"no skill {name!r}: the skills are {', '.join(NAMES)}")


def _existing(path: Path) -> bytes | None:
    """The bytes of the file at `path`, None when nothing is there; UsageError when
    something other than a regular file is (a link, a folder): it is not ours to replace."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{path} exists and is not a regular file; not replacing it")
    return path.read_bytes()


def _plan(dest: Path, skill: Skill, force: bool) -> tuple[Action, list[tuple[Path, bytes]]]:
    """What installing `skill` into `dest` does, and the files to write; nothing written."""
    folder = dest / skill.name
    if os.path.lexists(folder) and not folder.is_dir():
        raise UsageError(f"{folder} exists and is not a folder; not replacing it")
    writes, differs, present = [], [], False
    for rel, data in skill.files.items():
        path = folder / rel
        old = _existing(path)
        present = present or old is not None
        if old != data:
            writes.append((path, data))
            if old is not None:
                differs.append(path)
    if differs and not force:
        raise UsageError(
            f"{differs[0]} differs from the {skill.name} skill of this incidents (edited, or "
            "of another version); not replacing it (--force replaces it)"
        )
    if not writes:
        return "unchanged", []
    return ("replaced" if present else "installed"), writes


def install(dest: Path, *, force: bool = False) -> list[Installed]:
    """Copy every shipped skill into `dest/<name>/`. Every destination is checked first,
    so a refusal writes nothing; each file is then replaced atomically."""
    if os.path.lexists(dest) and not dest.is_dir():
        raise UsageError(f"skills install: {dest} exists and is not a folder")
    planned = [(skill, *_plan(dest, skill, force)) for skill in shipped()]
    done = []
    for skill, action, writes in planned:
        for path, data in writes:
            fsutil.ensure_dir(path.parent, DIR_MODE)
            fsutil.atomic_write_bytes(path, data, FILE_MODE)
        done.append(Installed(skill.name, dest / skill.name / SKILL_FILE, action))
    return done
