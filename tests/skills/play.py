"""Playing a SKILL.md as written: its sections, its command blocks run in order by bash,
its JSON documents, and its placeholders, the only text a player substitutes.

A skill defines its placeholders in a table (`| `<NAME>` | its value |`); `Player.assign`
takes only those, `fill` refuses a block that uses any other, and `unplayed` names the
sections with commands a test has not run, so a test plays every step the skill has.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import REPO

SKILLS = REPO / "skills"  # the checkout's skills/, the package's incidents/skills/
BIN = Path(sys.executable).parent  # `incidents` and ruff of this venv (conftest: on PATH)
_HEADING = re.compile(r"^#{2,3} (.+)$", re.M)
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
_PLACEHOLDER = re.compile(r"<[A-Z_]+>")


def skill_text(name: str, base: Path = SKILLS) -> str:
    return (base / name / "SKILL.md").read_text()


def sections(text: str) -> dict[str, str]:
    """Heading (`## ` or `### `) -> the text up to the next heading."""
    marks = list(_HEADING.finditer(text))
    return {
        m.group(1).strip(): text[m.end() : (marks[i + 1].start() if i + 1 < len(marks) else None)]
        for i, m in enumerate(marks)
    }


def blocks(section: str, lang: str) -> list[str]:
    return [body for kind, body in _BLOCK.findall(section) if kind == lang]


def commands(section: str) -> list[str]:
    return [line for body in blocks(section, "sh") for line in body.splitlines() if line.strip()]


def defined_placeholders(text: str) -> set[str]:
    return set(re.findall(r"^\| `(<[A-Z_]+>)` \|", text, re.M))


@dataclass
class Ran:
    command: str
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Player:
    skill: str
    cwd: Path
    base: Path = SKILLS  # where the skill is: the checkout's, or an installed copy
    text: str = ""
    values: dict[str, str] = field(default_factory=dict)
    played: set[str] = field(default_factory=set)
    log: list[Ran] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.text = skill_text(self.skill, self.base)
        self.defined = defined_placeholders(self.text)
        self.sections = sections(self.text)

    def assign(self, name: str, value: str) -> None:
        assert name in self.defined, f"{self.skill} defines no placeholder {name}"
        self.values[name] = value

    def fill(self, text: str) -> str:
        used = set(_PLACEHOLDER.findall(text))
        assert used <= self.defined, f"{self.skill} uses undefined {used - self.defined}"
        missing = used - self.values.keys()
        assert not missing, f"no value yet for {missing} in {text!r}"
        for name in used:
            text = text.replace(name, self.values[name])
        return text

    def key(self, title: str) -> str:
        """The heading `title` names: itself, or `N. title`."""
        found = [t for t in self.sections if t == title or t.split(". ", 1)[-1] == title]
        assert len(found) == 1, f"{self.skill} has no single section {title!r}: {found}"
        return found[0]

    def section(self, title: str) -> str:
        return self.sections[self.key(title)]

    def play(self, title: str) -> Iterator[Ran]:
        """Run the commands of the section's sh blocks in order, as written, one per
        `next()`: between two, a test sets what the output it read gives a placeholder
        (or writes the document the skill asks for), as the agent would."""
        templates = commands(self.section(title))
        assert templates, f"section {title!r} of {self.skill} has no commands"
        for template in templates:
            yield self.run(self.fill(template))
        self.played.add(self.key(title))

    def run(self, command: str) -> Ran:
        p = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, env=dict(os.environ),
            cwd=self.cwd, timeout=180,
        )  # fmt: skip
        result = Ran(command, p.returncode, p.stdout, p.stderr)
        self.log.append(result)
        return result

    def document(self, title: str, lang: str = "json") -> str:
        [body] = blocks(self.section(title), lang)
        return self.fill(body)

    def unplayed(self) -> set[str]:
        """The sections with commands that no `play` ran."""
        return {t for t, body in self.sections.items() if commands(body)} - self.played
