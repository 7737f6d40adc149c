"""Normalization's cheap stand-ins for two patterns capture no longer compiles
(`incidents.signature`): they answer as the patterns do on any text."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from incidents import signature
from incidents.signature import normalize_steps

SAMPLES = ["", " a \t b\n", "x\u00a0y\u2003z", "\u0663 arabic three", "no digits", "v2"]


@given(st.one_of(st.text(), st.sampled_from(SAMPLES)))
def test_has_digit_is_the_digit_pattern(text: str) -> None:
    assert signature._has_digit(text) == (re.search(r"\d", text) is not None)


@given(st.one_of(st.text(), st.sampled_from(SAMPLES)))
def test_whitespace_collapses_as_the_space_pattern_did(text: str) -> None:
    expected = re.sub(r"\s+", " ", text).strip()
    steps: list[tuple[str, str, str]] = []
    out = normalize_steps(text, steps)
    assert (("space", "runs of whitespace, at the ends", "one space, none") in steps) == (
        expected != text
    )
    if expected and not re.search(r"[\d<>/\\:@.'\"=_-]", expected):  # nothing else to replace
        assert out == expected[: signature.MAX_MESSAGE] or len(expected) > signature.MAX_MESSAGE
