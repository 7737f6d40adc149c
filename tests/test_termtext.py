"""Free text reaches a terminal as text: no escape sequence or control character of a
reason, a message or a note is printed (incidents.termtext, output.out)."""

from __future__ import annotations

import json
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from incidents.layout import Root
from incidents.termtext import one_line, printable
from tests.helpers import Cli
from tests.test_groups import cap, doc, reindex_from_scratch

HOSTILE = "same\n\x1b[31mregression: #9 of X\x1b[0m\rhidden\x07\x1b]0;title\x07 \u202eevil\x00"


BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _is_control(c: str) -> bool:
    return (unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in BIDI) and c not in "\n\t"


def clean(text: str) -> bool:
    return not any(_is_control(c) for c in text)


def test_one_line_removes_escapes_and_folds_control_characters() -> None:
    assert one_line(HOSTILE) == "same regression: #9 of X hidden evil"
    assert one_line("plain text") == "plain text"
    assert one_line(" a \t b ") == "a b"
    assert one_line(42) == "42"


def test_printable_keeps_lines_and_tabs() -> None:
    assert printable("a\tb\nc\x1b[1md\x1b[0m\r\n") == "a\tb\ncd \n"
    assert printable("\x9b31mx\x9dtitle\x9c") == "x"


@given(st.text())
def test_nothing_a_terminal_obeys_survives(text: str) -> None:
    shown = one_line(text)
    assert clean(shown) and "\n" not in shown and "\t" not in shown
    assert clean(printable(text))
    assert one_line(shown) == shown


def test_a_hostile_reason_is_stored_on_one_line_and_printed_as_text(cli: Cli, root: Root) -> None:
    a = cap(cli, "connection reset by peer", step="up")
    b = cap(cli, "upload timed out after 30s", step="up")
    merged = cli("group", "merge", a, b, "--reason", HOSTILE)
    assert merged.code == 0, merged.err
    assert clean(merged.out)
    (decision,) = doc(root, b)["group"]["decisions"]
    assert decision["reason"] == "same regression: #9 of X hidden evil"
    for args in (("status", b), ("explain", b), ("status",), ("review", "--stdout")):
        r = cli(*args)
        assert r.code == 0, (args, r.err)
        assert clean(r.out), args
    line = next(ln for ln in cli("status", b).out.splitlines() if "regression: #9" in ln)
    assert "same" in line and "hidden" in line  # one line: nothing forged on its own


def test_text_written_into_a_bundle_by_another_tool_is_printed_as_text(
    cli: Cli, root: Root
) -> None:
    a = cap(cli, "connection reset by peer", step="up")
    b = cap(cli, "upload timed out after 30s", step="up")
    assert cli("group", "merge", a, b, "--reason", "same").code == 0
    _, folder = root.locate(b)
    written = doc(root, b)
    written["group"]["decisions"][0]["reason"] = HOSTILE
    written["group"]["decisions"][0]["by"] = "\x1b[2Jroot"
    written["message"] = "upload timed out\x1b[8m after 30s"
    (folder / "incident.json").write_text(json.dumps(written))
    reindex_from_scratch(cli, root)
    for args in (("status", b), ("explain", b), ("status",), ("review", "--stdout")):
        r = cli(*args)
        assert r.code == 0, (args, r.err)
        assert clean(r.out), args
    line = next(ln for ln in cli("explain", b).out.splitlines() if "regression: #9" in ln)
    assert "same" in line and "hidden" in line


def test_an_archive_reason_is_stored_on_one_line(cli: Cli, root: Root) -> None:
    a = cap(cli, "connection reset by peer", step="up")
    assert cli("archive", a, "--resolved", "--reason", HOSTILE).code == 0
    assert doc(root, a)["resolution"] == "same regression: #9 of X hidden evil"
    assert cli("archive", cap(cli, "x", step="up"), "--resolved", "--reason", "\x1b[0m\n").code == 2
