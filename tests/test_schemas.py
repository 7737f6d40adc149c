"""schemas/ matches the models; seed 004's examples and our bundles validate both ways."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from incidents import models, schemas
from incidents.layout import Root
from tests.helpers import FIXTURES, Cli

SEED = FIXTURES / "seed004"
SEED_DOCS = [
    ("incident.json", "incident", models.Incident),
    ("plan.json", "plan", models.Plan),
    ("attempt_01.json", "attempt", models.Attempt),
    ("run_result.json", "run_result", models.RunResult),
]


def test_committed_schemas_equal_what_the_models_generate() -> None:
    assert schemas.stale(schemas.default_dir()) == []


def test_stale_detects_a_changed_schema_file(tmp_path: Path) -> None:
    schemas.write_all(tmp_path)
    assert schemas.stale(tmp_path) == []
    path = tmp_path / "plan.schema.json"
    path.write_text(path.read_text().replace('"summary"', '"sumary"', 1))
    assert schemas.stale(tmp_path) == ["plan"]


@pytest.mark.parametrize(("file", "name", "model"), SEED_DOCS)
def test_seed_examples_validate(file: str, name: str, model: type[BaseModel]) -> None:
    doc = json.loads((SEED / file).read_text())
    schemas.validator(name).validate(doc)
    model.model_validate(doc)


def test_schemas_reject_what_the_models_reject() -> None:
    doc = json.loads((SEED / "incident.json").read_text())
    bad = {**doc, "status": "done"}
    assert list(schemas.validator("incident").iter_errors(bad))
    with pytest.raises(ValueError):
        models.Incident.model_validate(bad)


def test_a_captured_bundle_validates_through_jsonschema(cli: Cli, root: Root) -> None:
    r = cli("capture", "--step", "s", "--message", "m")
    folder = root.inbox / r.out.strip()
    schemas.validator("incident").validate(json.loads((folder / "incident.json").read_text()))
    schemas.validator("context").validate(json.loads((folder / "context.json").read_text()))
    cli("archive", r.out.strip(), "--resolved", "--reason", "ok")
    run_result = json.loads((root.runs_dir(r.out.strip()) / "run_result.json").read_text())
    schemas.validator("run_result").validate(run_result)


def test_schemas_command_checks_and_writes(cli: Cli, tmp_path: Path) -> None:
    assert cli("schemas").code == 0
    assert cli("schemas", "--dir", str(tmp_path)).code == 1
    assert cli("schemas", "--write", "--dir", str(tmp_path)).code == 0
    assert cli("schemas", "--dir", str(tmp_path)).code == 0
