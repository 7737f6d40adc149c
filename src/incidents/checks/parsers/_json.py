"""JSON helpers shared by the parsers."""

from __future__ import annotations

import json
from typing import Any

from incidents.checks.parsers import ParseError, tail


def load(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ParseError(f"{what} is not JSON ({exc}): {tail(text, 200)!r}") from None


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
