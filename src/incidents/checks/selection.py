"""The tests a test runner profile (pytest, Pester) runs for the targets, and what its run
must show for the report to be clean.

For a Python target, pytest runs: the targets that are test files, the files of
`[checks] test_paths`, the test files of the project (the working directory) that import
a target's module or are named after it (incidents.checks.testscan), and the files of the
tests the failure's log names. Test files are run whole. A selected file must yield at
least one test, and a test the log names must have run and passed: the JUnit parser turns
anything else into a finding (RELIABILITY.md: a test counts as fixed only when it ran and
passed, not when the runner exited 0). A named test that cannot be run (its file is
outside the working directory, or missing) is refused: an infrastructure failure, since
what failed cannot be checked.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from incidents.checks.inputs import Inputs, matches
from incidents.checks.profiles import ToolProfile
from incidents.checks.testscan import SCAN_MAX_ENTRIES, SCAN_MAX_FILES


@dataclass(frozen=True)
class Target:
    path: str  # as shown in findings: relative to cwd when under it
    digest: str


@dataclass(frozen=True)
class TestSelection:
    files: tuple[Target, ...] = ()  # given to the runner, whole
    nodes: tuple[str, ...] = ()  # test ids the log names, relative to cwd
    expect: tuple[str, ...] = ()  # files that must yield a test, and `nodes`: must pass
    refused: tuple[str, ...] = ()  # named tests that cannot be run, and why
    related: tuple[str, ...] = ()  # the files selected through a target (not test_paths)

    @property
    def names(self) -> list[str]:
        """What the report says was run: the test files, then the named test ids."""
        return [t.path for t in self.files] + list(self.nodes)

    @property
    def own_tests(self) -> list[str] | None:
        """What the report says was selected through a target (None: no selection)."""
        return list(self.related) if self.files or self.nodes else None


def select_tests(
    inputs: Inputs, cwd: Path, profile: ToolProfile, targets: Sequence[Target],
    test_paths: Sequence[str], named: Sequence[str], skip: str,
) -> TestSelection:  # fmt: skip
    """The selection for `profile` (selects = "tests"); `targets` are the profile's own
    (matching its globs), `named` the node ids a failure's log names, `skip` the checks
    cache folder (not walked)."""
    files = {t.path: t for t in targets if matches(t.path, profile.test_globs)}
    related = dict.fromkeys(files)  # a target, its importers, its namesakes, named files
    # pytest names a file outside its rootdir (cwd) by a relative path of its own
    expect = dict.fromkeys(path for path in files if not os.path.isabs(path))
    for entry in test_paths:
        for rel, digest in inputs.test_files(str(cwd), entry, profile.test_globs):
            files.setdefault(rel, Target(rel, digest))
    if profile.language != "python":
        return TestSelection(tuple(files.values()), (), tuple(expect), related=tuple(related))

    refused: dict[str, str] = {}  # file -> why: one refusal per file, however many tests

    def add(rel: str) -> None:
        if rel not in files:
            try:
                files[rel] = Target(rel, inputs.digest(str(cwd / rel)))
            except OSError as exc:  # gone since it was found
                refused[rel] = f"test file {rel}: {exc.strerror or exc}"
                return
        expect.setdefault(rel)
        related.setdefault(rel)

    found = inputs.related_tests(str(cwd), profile.test_globs, skip, [t.path for t in targets])
    if found is None:
        refused[""] = (f"more than {SCAN_MAX_ENTRIES} files or {SCAN_MAX_FILES} test files "
                       f"under {cwd}: the tests that import the targets cannot be found")  # fmt: skip
    for rel in found or []:
        add(rel)
    nodes: dict[str, None] = {}
    for given, node, problem in inputs.named_tests(str(cwd), named) if named else []:
        path, sep, _ = node.partition("::")
        if problem:
            refused.setdefault(
                path, f"{given}, named in the failure's log, cannot be run: {problem}"
            )
        elif sep or matches(path, profile.test_globs):  # a bare path: a collection error
            add(path)
            if sep:
                nodes.setdefault(node)
                expect.setdefault(node)
    return TestSelection(
        tuple(files.values()),
        tuple(nodes),
        tuple(expect),
        tuple(refused.values()),
        tuple(related),
    )
