"""The machine's part of an absolute path, for `incidents.signature`'s `path` rule: where
its names stop being the machine's (a home, a temporary folder, pytest's run folder), and
the random part of a temporary folder's name, in braces. Standard library only, and
imported (by `signature._path`) only when a message holds an absolute path."""

from __future__ import annotations

import re

__all__ = ["below_machine", "temp_name"]

_TEMP_DIRS = ("tmp", "temp")
_temp: re.Pattern[str] | None = None
_pytest_run: re.Pattern[str] | None = None


def _is_temp_dir(parts: list[str], i: int) -> bool:
    """`/tmp`, `Temp`, or macOS's `/var/folders/xx/<random>/T`."""
    name = parts[i].lower()
    return name in _TEMP_DIRS or (name == "t" and i >= 3 and parts[i - 3].lower() == "folders")


def temp_name(parts: list[str], i: int) -> str:
    """An absolute path's name `parts[i]`, the random part of a temporary folder's name in
    braces: `tempfile`'s (`tmp` + 8 of `[a-z0-9_]`: `tmp{id}`, `tmp{id}.json`), pytest's
    base folders (`pytest-of-{id}`, `pytest-{n}`) and the number ending a test's folder in
    one (`test_upload{n}`), and a random suffix after a dash (`venv-{id}`): letters and
    digits mixed, of 6 to 32, alternating twice or more (`a1b2c3`; not `aarch64`, `2024q1`),
    or any mix directly in a temporary folder."""
    global _temp, _pytest_run
    name = parts[i]
    if name.startswith("pytest-of-"):
        return "pytest-of-{id}"
    if "tmp" not in name and not any(c.isdigit() for c in name):
        return name  # every shape below has a digit, but tempfile's
    if _temp is None:
        _temp = re.compile(
            r"(?P<tempfile>(?<![A-Za-z0-9])tmp[a-z0-9_]{8}(?![a-z0-9_]))"
            r"|(?<=[A-Za-z0-9]-)(?P<dash>(?=[A-Za-z0-9]*?\d)(?=[A-Za-z0-9]*?[A-Za-z])"
            r"[A-Za-z0-9]{6,32})(?![A-Za-z0-9_])"
        )
        _pytest_run = re.compile(r"pytest-(?:\d+|current)")
    assert _pytest_run is not None
    if _pytest_run.fullmatch(name):
        return "pytest-{n}"
    if i and _pytest_run.fullmatch(parts[i - 1]) and name[-1].isdigit():
        return name.rstrip("0123456789") + "{n}"
    in_temp = i > 0 and _is_temp_dir(parts, i - 1)

    def brace(m: re.Match[str]) -> str:
        if m.group("tempfile"):
            return "tmp{id}"
        if in_temp or _alternating(m.group("dash")):
            return "{id}"
        return m.group(0)

    return _temp.sub(brace, name)


def _alternating(text: str) -> bool:
    """Letters and digits alternate at least twice (three runs or more): `a1b2`, `9zz8y`."""
    runs = 1 + sum(a.isdigit() != b.isdigit() for a, b in zip(text, text[1:], strict=False))
    return runs >= 4


def below_machine(parts: list[str]) -> int:
    """Where an absolute path's names stop being the machine's: below a home
    (`/home/<user>`, `/Users/<user>`, `/root`), a temp folder's own folder
    (`/tmp/<random>/...`, `...\\Temp\\<random>\\...`, macOS's `/var/folders/../T/<random>`)
    or pytest's run folder (`/tmp/pytest-of-<user>/pytest-<n>/...`)."""
    global _pytest_run
    if _pytest_run is None:
        _pytest_run = re.compile(r"pytest-(?:\d+|current)")
    lowered = [p.lower() for p in parts]
    start = 2 if lowered[:1] in (["home"], ["users"]) else 1 if lowered[:1] == ["root"] else 0
    for i in range(len(parts)):
        if _is_temp_dir(parts, i) and i + 2 < len(parts):
            start = max(start, i + 2)
        elif _pytest_run.fullmatch(lowered[i]) and i + 1 < len(parts):
            start = max(start, i + 1)
    return start
