"""Properties under generated hostile input: bundles, folder names, logs and event lines fed
to intake, the step service, the mirror's rebuild and `status` never raise past their
error types, and each takes a bounded time."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from incidents import eventlog, store
from incidents.cli import main
from incidents.config import load_config
from incidents.errors import IncidentsError
from incidents.layout import Root
from incidents.mirror.rebuild import reindex
from incidents.step.service import run_step
from incidents.watch.intake import Verdict, examine

BOUND_S = 20.0  # per example: minutes when anything is super-linear, ms otherwise
PROPS = settings(
    max_examples=30,
    deadline=timedelta(seconds=BOUND_S),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Any name a filesystem holds: bytes but `/` and NUL, not `.` or `..`.
NAMES = st.binary(min_size=1, max_size=255).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)
IDS = st.from_regex(r"\Aincident_[a-z0-9]{1,12}\Z")
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
JSONISH = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)


@st.composite
def nesting_bombs(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(60, 3000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    return opener * depth + b"1" + closer * depth


EVENT_LINES = st.one_of(
    JSONISH.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"key": st.text(max_size=8)}, optional={"x": JSONISH}).map(
        lambda v: json.dumps(v).encode()
    ),
    nesting_bombs(),
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ")),
)


@st.composite
def bundles(draw: st.DrawFn, incident_id: str) -> dict[bytes, bytes | None]:
    """A bundle's files (None: a folder): a plausible incident.json with fields replaced by
    anything, or raw bytes; events, status and other files of any name and content."""
    doc: dict[str, Any] = {
        "incident_id": incident_id, "status": "new", "step": "lint", "message": "ruff failed",
        "failure_class": "code", "error_code": "LINT_FAILURE", "created_at": "2026-11-24T00:00:00Z",
        "workdir": "/nonexistent/work", "python_files": [], "verify": [],
    }  # fmt: skip
    for key in draw(st.lists(st.sampled_from(sorted(doc)), max_size=3)):
        doc[key] = draw(JSONISH)
    files: dict[bytes, bytes | None] = {
        b"incident.json": draw(st.one_of(st.just(json.dumps(doc).encode()), st.binary(max_size=80)))
    }
    if draw(st.booleans()):
        files[b"status.txt"] = draw(st.sampled_from([b"new\n", b"", b"\xff\xfe", b"resolved\n"]))
    lines = draw(st.lists(EVENT_LINES, max_size=4))
    if lines:
        files[b"events.jsonl"] = b"\n".join(lines) + b"\n"
    for name in draw(st.lists(NAMES, max_size=3)):
        files[name] = draw(st.one_of(st.none(), st.binary(max_size=64)))
    return files


def _write(folder: Path, files: dict[bytes, bytes | None]) -> None:
    os.mkdir(folder)
    for name, data in files.items():
        path = os.path.join(os.fsencode(folder), name)
        with contextlib.suppress(FileExistsError):
            if data is None:
                os.mkdir(path)
            else:
                with open(path, "wb") as fh:
                    fh.write(data)


@contextlib.contextmanager
def _root() -> Iterator[Root]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Root(Path(tmp) / "reports")
        root.ensure()
        yield root


def _places(root: Root, name: str) -> int:
    return sum(
        (base / name).exists()
        for base in (root.inbox, root.bucket("resolved"), root.bucket("escalated"))
    ) + sum(n == name or n.startswith(f"{name}.") for n in os.listdir(root.rejected))


@PROPS
@given(data=st.data(), name=st.one_of(IDS, NAMES.map(os.fsdecode)))
def test_intake_examines_any_bundle_and_sets_aside_what_it_rejects(
    data: st.DataObject, name: str
) -> None:
    with _root() as root:
        folder = root.inbox / name
        _write(folder, data.draw(bundles(name)))
        start = time.perf_counter()
        seen = examine(
            folder, now_ns=time.time_ns() + 10**12, whole_ns=None, stable_s=0, grace_s=0, root=root
        )
        if seen.verdict is Verdict.REJECT:
            target = store.reject(root, folder, seen.reason)
            assert target.name.isprintable() and target.parent == root.rejected
            assert not os.path.lexists(folder)
            reason = (target / "reason.txt").read_text()
            assert all(c.isprintable() or c == "\n" for c in reason)
        assert time.perf_counter() - start < BOUND_S


@PROPS
@given(data=st.data(), incident_id=IDS)
def test_the_step_service_raises_only_its_error_types(
    data: st.DataObject, incident_id: str
) -> None:
    with _root() as root:
        _write(root.inbox / incident_id, data.draw(bundles(incident_id)))
        cfg = load_config()
        start = time.perf_counter()
        with contextlib.suppress(IncidentsError):
            run_step(root, cfg, incident_id)
        assert time.perf_counter() - start < BOUND_S
        assert _places(root, incident_id) == 1  # worked, or set aside: never lost


@settings(PROPS, max_examples=10)
@given(
    data=st.data(),
    names=st.lists(st.tuples(st.sampled_from(["inbox", "resolved", "escalated", "rejected"]),
                             st.one_of(IDS, NAMES.map(os.fsdecode))), max_size=4),  # fmt: skip
)
def test_rebuild_and_status_take_any_tree(
    data: st.DataObject, names: list[tuple[str, str]]
) -> None:
    with _root() as root:
        for bucket, name in names:
            base = root.rejected if bucket == "rejected" else root.bucket(bucket)
            os.makedirs(base, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                _write(base / name, data.draw(bundles(name)))
        start = time.perf_counter()
        with contextlib.suppress(IncidentsError):
            reindex(root)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            codes = [main(["status", "--root", str(root.path)]),
                     main(["status", "--json", "--root", str(root.path)])]  # fmt: skip
        assert all(code in (0, 1) for code in codes), err.getvalue()
        assert all(c.isprintable() or c in "\n\t" for c in out.getvalue())
        assert time.perf_counter() - start < BOUND_S


@PROPS
@given(lines=st.lists(EVENT_LINES, max_size=12))
def test_event_lines_that_do_not_parse_are_skipped(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        docs, offset, bad = eventlog.read(path)
        assert len(docs) + bad == sum(1 for line in lines if line.strip())
        assert offset == path.stat().st_size


@PROPS
@given(text=st.text(max_size=4000) | st.binary(max_size=4000).map(lambda b: b.decode("latin-1")))
def test_every_parser_of_log_text_is_total(text: str) -> None:
    from incidents.checks.testscan import named_tests
    from incidents.classify import classify
    from incidents.redact import redact
    from incidents.signature import normalize_message

    start = time.perf_counter()
    assert redact(redact(text)) == redact(text)
    classify(text[:2000], text, 1)
    normalize_message(text)
    named_tests(text)
    assert time.perf_counter() - start < BOUND_S
