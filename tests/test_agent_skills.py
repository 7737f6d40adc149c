"""The shipped skills are valid Agent Skills, name only commands and flags that exist,
and are package data (a `pip install` has them)."""

from __future__ import annotations

import importlib
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from incidents import agent_skills
from incidents.errors import InvalidDocument
from tests.helpers import REPO, Cli
from tests.skills.play import SKILLS, blocks, skill_text

NAMES = list(agent_skills.NAMES)
# the Agent Skills format: front matter fields a skill may have
KNOWN_FIELDS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}


def yaml_front_matter(text: str) -> dict[str, object]:
    yaml = importlib.import_module("yaml")  # PyYAML (pre-commit's): a real YAML parser
    head = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert head is not None, "no front matter"
    doc = yaml.safe_load(head.group(1))
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("name", NAMES)
def test_the_front_matter_is_valid_yaml_with_a_name_and_a_description(name: str) -> None:
    text = skill_text(name)
    doc = yaml_front_matter(text)
    assert set(doc) <= KNOWN_FIELDS and {"name", "description"} <= set(doc)
    assert doc["name"] == name == Path(SKILLS / name).name  # the folder's name
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) and len(name) <= 64
    description = doc["description"]
    assert isinstance(description, str) and 0 < len(description) <= 1024
    assert "Use when" in description  # what agents pick a skill by
    # our own reader (`skills list`) reads what YAML reads
    assert agent_skills.front_matter(text, name) == doc
    assert len(text.splitlines()) < 500  # the format's advice for one SKILL.md


def test_the_checkout_skills_folder_is_the_package_data() -> None:
    assert [s.name for s in agent_skills.shipped()] == NAMES
    for skill in agent_skills.shipped():
        assert (SKILLS / skill.name / "SKILL.md").read_bytes() == skill.files["SKILL.md"]


def test_pyproject_ships_every_skill_file_as_package_data() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["incidents"]
    package = REPO / "src" / "incidents"
    shipped = {p for pattern in globs for p in package.glob(pattern)}
    for skill in agent_skills.shipped():
        for rel in skill.files:
            assert package / "skills" / skill.name / rel in shipped, rel


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# no front matter\n", "does not start with a '---' front matter block"),
        ("---\nname: x\n", "its front matter is not closed"),
        ("---\nname x\n---\n", "is not 'key: value'"),
    ],
)
def test_a_malformed_front_matter_is_named(text: str, reason: str) -> None:
    with pytest.raises(InvalidDocument, match=re.escape(reason)):
        agent_skills.front_matter(text, "SKILL.md")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "Error_Plan", "description": "d"}, "name: 'Error_Plan'"),
        ({"name": "other", "description": "d"}, "is not its folder's name"),
        ({"name": "error-plan", "description": ""}, "description: must have 1 to 1024"),
        ({"name": "error-plan", "description": "d" * 1025}, "description: must have 1 to 1024"),
    ],
)
def test_an_invalid_name_or_description_is_refused(fields: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidDocument, match=re.escape(message)):
        agent_skills.check_front_matter(fields, "error-plan", "SKILL.md")


# --- every `incidents ...` a skill names exists, with those flags -----------------------------


def invocations(text: str) -> list[list[str]]:
    """The words after `incidents` in each command of the sh blocks and each inline code
    span that starts with `incidents ` (placeholders made plain words)."""
    found = []
    commands = [line for body in blocks(text, "sh") for line in body.splitlines()]
    commands += re.findall(r"`(incidents [^`]*)`", text)
    for command in commands:
        for part in re.split(r"&&|;|\|", command):
            words = shlex.split(re.sub(r"<[A-Z_]+>", "X", part))
            if words and words[0] == "incidents":
                found.append(words[1:])
    return found


def help_options(cli: Cli, path: list[str]) -> set[str]:
    r = cli(*path, "--help")
    assert r.code == 0, f"`incidents {' '.join(path)}` does not exist: {r.err}"
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", r.out))


@pytest.mark.parametrize("name", NAMES)
def test_every_incidents_command_a_skill_names_exists_with_its_flags(name: str, cli: Cli) -> None:
    named = invocations(skill_text(name))
    assert len(named) >= 8
    for words in named:
        path = words[:2] if words[0] == "skills" else words[:1]
        options = help_options(cli, path)
        own = words[: words.index("--")] if "--" in words else words  # not `run -- CMD`'s
        flags = {w.split("=", 1)[0] for w in own if w.startswith("--")}
        assert flags <= options, f"`incidents {' '.join(words)}`: no {flags - options}"


def test_the_flag_check_can_fail(cli: Cli) -> None:
    """The check above reads real help: an unknown flag or command is not in it."""
    assert "--from" in help_options(cli, ["plan"])
    assert "--lease" not in help_options(cli, ["plan"])
    assert cli("no-such-command", "--help").code == 2
