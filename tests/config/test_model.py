"""The one Config: every table is a Section, and one wording for a bad key."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from incidents.config import Config
from incidents.config_section import Section
from incidents.errors import explain_validation
from incidents.models import Plan


def _tables(model: type[BaseModel]) -> set[type[BaseModel]]:
    found = {model}
    for field in model.model_fields.values():
        for arg in [field.annotation, *getattr(field.annotation, "__args__", ())]:
            if isinstance(arg, type) and issubclass(arg, BaseModel) and arg not in found:
                found |= _tables(arg)
    return found


def test_every_table_is_a_section() -> None:
    tables = _tables(Config)
    assert len(tables) >= 9  # Config, its seven tables, profiles and a single tier
    assert all(issubclass(t, Section) for t in tables), [
        t for t in tables if not issubclass(t, Section)
    ]


def _error(model: type[BaseModel], doc: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        model.model_validate(doc)
    return info.value


def test_explain_names_the_first_field_and_words_unknown_keys() -> None:
    assert explain_validation(_error(Config, {"policy": {"bogus": 1}})) == (
        "policy.bogus",
        "unknown field",
    )
    assert explain_validation(_error(Config, {"nonsense": 1}), unknown="unknown key") == (
        "nonsense",
        "unknown key",
    )


def test_explain_can_show_the_rejected_value_but_not_a_whole_table() -> None:
    exc = _error(Config, {"watch": {"workers": 0}})
    assert explain_validation(exc, show_input=True) == (
        "watch.workers",
        "Input should be greater than or equal to 1 (got 0)",
    )
    assert explain_validation(_error(Config, {"watch": 5}), show_input=True)[1].endswith("(got 5)")


def test_explain_lists_the_other_errors_up_to_a_limit() -> None:
    exc = _error(Plan, {})
    count = len(exc.errors())
    assert count > 3
    field, reason = explain_validation(exc, others=2)
    assert field == str(exc.errors()[0]["loc"][0]) and f"(and {count - 1} more: " in reason
    assert reason.endswith("; ...)") and reason.count("Field required") == 3
    assert "more" not in explain_validation(exc)[1]
