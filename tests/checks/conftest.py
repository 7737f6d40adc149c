"""Shared helpers for the check engine's tests: captured outputs, settings in tmp dirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents.checks.parsers import PARSERS, RawFinding, ToolOutput
from incidents.checks.settings import ChecksSettings
from incidents.models.pipeline import ErrorPipelineContext

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tools"


def captured(case: str) -> ToolOutput:
    doc = json.loads((FIXTURES / f"{case}.json").read_text())
    return ToolOutput(doc["stdout"], doc["stderr"], doc["exit_code"], doc["report"])


def parse(parser: str, case: str) -> list[RawFinding]:
    return PARSERS[parser](captured(case))


@pytest.fixture
def ctx() -> ErrorPipelineContext:
    return ErrorPipelineContext(run_id="run-1", workstream_id="ws-1")


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache dir per test module, so mypy's own cache is warm after the first test."""
    return tmp_path_factory.mktemp("check-cache")


@pytest.fixture
def settings(shared_cache: Path) -> ChecksSettings:
    return ChecksSettings(cache_dir=str(shared_cache))
