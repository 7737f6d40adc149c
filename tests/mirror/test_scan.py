"""Reading a bundle folder into its mirror row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from incidents import mirror
from incidents.errors import InvalidDocument, UnsafeFile
from incidents.layout import Root
from incidents.mirror import IncidentRow
from tests.mirror.rows import incident_doc, make_bundle


def test_row_from_bundle_reads_incident_and_state(root: Root) -> None:
    folder = make_bundle(
        root,
        "escalated",
        "inc_a",
        state={"current_state": "S4_QUARANTINE", "not_before": "2026-02-17T03:00:10+00:00"},
        status="escalated",
        error_code="TIMEOUT",
        occurrences=4,
        last_seen="2026-02-17T09:00:00+00:00",
        updated_at="2026-02-17T10:00:00+00:00",
    )
    row = mirror.row_from_bundle(root, "escalated", folder)
    assert row == IncidentRow(
        incident_id="inc_a",
        status="escalated",
        state="S4_QUARANTINE",
        step="amazon_download",
        failure_class="transient",
        error_code="TIMEOUT",
        signature="transient | amazon_download | Network timeout",
        run_id="run_20260217_115959_123456",
        message="Network timeout during receipt download",
        occurrences=4,
        created_at="2026-02-17T03:00:00+00:00",
        updated_at="2026-02-17T10:00:00+00:00",
        last_seen="2026-02-17T09:00:00+00:00",
        bucket="escalated",
        location="error_archive/escalated/inc_a",
        not_before=1771297210.0,
        waiting=False,
        lease_owner=None,
    )


def test_row_from_bundle_defaults_without_state(root: Root) -> None:
    row = mirror.row_from_bundle(root, "inbox", make_bundle(root, "inbox", "inc_b"))
    assert (row.state, row.occurrences, row.error_code, row.not_before) == (None, 1, None, None)
    assert row.last_seen == row.created_at


def test_row_from_bundle_falls_back_to_status_txt(root: Root) -> None:
    folder = make_bundle(root, "inbox", "inc_c")
    doc = incident_doc("inc_c")
    del doc["status"]
    (folder / "incident.json").write_text(json.dumps(doc))
    (folder / "status.txt").write_text("planned\n")
    assert mirror.row_from_bundle(root, "inbox", folder).status == "planned"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"step": ""}, "step"),
        ({"occurrences": 0}, "occurrences"),
        ({"incident_id": "someone_else"}, "incident_id"),
    ],
)
def test_row_from_bundle_names_the_bad_field(
    root: Root, change: dict[str, Any], error: str
) -> None:
    folder = make_bundle(root, "inbox", "inc_d", **change)
    with pytest.raises(InvalidDocument) as info:
        mirror.row_from_bundle(root, "inbox", folder)
    assert info.value.field == error


def test_row_from_bundle_refuses_symlinks_and_bad_json(root: Root, tmp_path: Path) -> None:
    folder = make_bundle(root, "inbox", "inc_e")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(incident_doc("inc_e")))
    (folder / "incident.json").unlink()
    (folder / "incident.json").symlink_to(outside)
    with pytest.raises(UnsafeFile):
        mirror.row_from_bundle(root, "inbox", folder)
    (folder / "incident.json").unlink()
    (folder / "incident.json").write_text('{"incident_id": "inc_e", "incident_id": "x"}')
    with pytest.raises(InvalidDocument, match="duplicate"):
        mirror.row_from_bundle(root, "inbox", folder)
