"""Every endpoint of `incidents serve` against a real uvicorn on a loopback port: reads from
the mirror, actions through the CLI's services, errors with the CLI's messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents import pause
from incidents.layout import Root
from incidents.models import ArchiveRequest, PauseRequest, ResolveRequest, ResumeRequest
from incidents.serve.routes import ENDPOINTS
from tests.helpers import REPO, Cli, capture
from tests.serve.conftest import escalate
from tests.serve.server import Server


def test_health_counts_and_the_pause(server: Server, cli: Cli, root: Root) -> None:
    capture(cli, message="download timed out")
    doc = server.until("/api/health", lambda d: d["counts"]["inbox"] == 1)
    assert doc["ok"] is True and doc["root"] == str(root.path)
    assert doc["paused"] is None and doc["counts"]["inbox.new"] == 1
    pause.pause(root, "outage")
    later = server.call("GET", "/api/health").json()
    assert later["paused"]["reason"] == "outage"


def test_list_filters_and_pages_like_status(server: Server, cli: Cli, fast: Path) -> None:
    ids = [capture(cli, step=f"step{i % 2}", message=f"failure {i}") for i in range(5)]
    gone = escalate(cli, fast)
    # the catch-up loop brings the fresh captures into the mirror: status's rows, newest first
    doc = server.until("/api/incidents?limit=2", lambda d: d["total"] == 5)
    assert doc["limit"] == 2 and doc["offset"] == 0
    status = cli("status", "--json").json()
    assert [r["incident_id"] for r in doc["incidents"]] == [
        r["incident_id"] for r in status["incidents"][:2]
    ]
    assert set(doc["incidents"][0]) == {*status["incidents"][0], "host"}  # as --all-hosts
    page2 = server.call("GET", "/api/incidents?limit=2&offset=4").json()["incidents"]
    assert [r["incident_id"] for r in page2] == [status["incidents"][4]["incident_id"]]
    step0 = server.call("GET", "/api/incidents?step=step0").json()
    assert sorted(r["incident_id"] for r in step0["incidents"]) == sorted(ids[0::2])
    closed = server.call("GET", "/api/incidents?status=escalated").json()["incidents"]
    assert [(r["incident_id"], r["bucket"], r["outcome"]) for r in closed] == [
        (gone, "escalated", "escalated")
    ]
    assert server.call("GET", "/api/incidents?all=true").json()["total"] == 6


def test_list_refuses_bad_filters_with_the_cli_words(server: Server, cli: Cli) -> None:
    r = server.call("GET", "/api/incidents?status=done")
    assert r.status == 400
    assert (
        r.json()["error"]
        == cli("status", "--status", "done").err.removeprefix("incidents: ").strip()
    )
    assert server.call("GET", "/api/incidents?since=yesterday").status == 400
    assert server.call("GET", "/api/incidents?limit=0").status == 400
    assert server.call("GET", "/api/incidents?limit=501").status == 400
    assert server.call("GET", "/api/incidents?all=maybe").status == 400


def test_one_incident_in_full(server: Server, cli: Cli, fast: Path) -> None:
    incident_id = escalate(cli, fast)
    r = server.call("GET", f"/api/incidents/{incident_id}")
    assert r.status == 200, r.body
    doc = r.json()
    assert doc["incident"]["incident_id"] == incident_id
    assert doc["bucket"] == "escalated" and doc["state"] == "S4_QUARANTINE"
    assert doc["plan_doc"]["incident_id"] == incident_id
    assert doc["verdict"]["final_status"] == "escalated"
    assert "error_report_attempt_0.json" in doc["runs"]
    assert [s["what"] for s in doc["review"]["timeline"]][0] == "captured"
    assert doc["review"]["diffs"][0]["path"] == "bad.py"
    types = [e["type"] for e in doc["events"]]
    assert types[0] == "captured" and types[-2:] == ["archived", "escalation"]


def test_unknown_and_malformed_ids(server: Server, cli: Cli) -> None:
    r = server.call("GET", "/api/incidents/incident_nope")
    assert r.status == 404
    assert r.json() == {
        "error": cli("status", "incident_nope").err.removeprefix("incidents: ").strip(),
        "kind": "NotFound",
        "exit_code": 1,
    }
    bad = server.call("GET", "/api/incidents/a..b")
    assert bad.status == 400 and bad.json()["kind"] == "InvalidId"
    assert server.call("GET", "/api/jobs/run_nope/escalations").status == 404


def test_escalations_of_a_run_then_resolved_by_record_id(
    server: Server, cli: Cli, fast: Path, root: Root
) -> None:
    incident_id = escalate(cli, fast)
    run_id = json.loads((root.bucket("escalated") / incident_id / "incident.json").read_text())[
        "run_id"
    ]
    doc = server.call("GET", f"/api/jobs/{run_id}/escalations").json()
    [record] = doc["escalations"]
    assert record["incident_id"] == incident_id and record["open"] is True
    assert record["bucket"] == "escalated"
    r = server.act(f"/api/escalations/{record['id']}/resolve", {"guidance": "fixed upstream"})
    assert r.status == 200, r.body
    assert r.json()["decision"] == "resolved"
    assert (root.bucket("resolved") / incident_id).is_dir()
    again = server.act(f"/api/escalations/{record['id']}/resolve", {"guidance": "again"})
    assert again.status == 409 and again.json()["kind"] == "NotWaiting"
    [after] = server.call("GET", f"/api/jobs/{run_id}/escalations").json()["escalations"]
    assert after["open"] is False and after["guidance"] == "fixed upstream"
    assert server.act("/api/escalations/999999/resolve", {"guidance": "x"}).status == 404


def test_requeue_by_incident_id_puts_it_back_in_the_inbox(
    server: Server, cli: Cli, fast: Path, root: Root
) -> None:
    incident_id = escalate(cli, fast)
    body = {"guidance": "use the v2 API", "requeue": True}
    r = server.act(f"/api/escalations/{incident_id}/resolve", body)
    assert r.status == 200, r.body
    assert r.json() == {
        "incident_id": incident_id,
        "decision": "requeue",
        "guidance": "use the v2 API",
        "location": f"error_inbox/{incident_id}",
    }
    assert (root.inbox / incident_id).is_dir()
    # not escalated any more: the CLI's NotWaiting, as 409
    second = server.act(f"/api/escalations/{incident_id}/resolve", body)
    assert second.status == 409
    assert (
        second.json()["error"]
        == cli("resolve-escalation", incident_id, "--guidance", "x")
        .err.removeprefix("incidents: ")
        .strip()
    )
    empty = server.act(f"/api/escalations/{incident_id}/resolve", {"guidance": " "})
    assert empty.status == 400 or empty.status == 409
    typed = server.act(
        f"/api/escalations/{incident_id}/resolve", {"guidance": "x", "requeue": "yes"}
    )
    assert typed.status == 400 and typed.json()["error"].startswith("requeue: ")


def test_archive_then_archive_again(server: Server, cli: Cli, root: Root) -> None:
    incident_id = capture(cli, message="a flaky download")
    body = {"bucket": "resolved", "reason": "provider back up"}
    r = server.act(f"/api/incidents/{incident_id}/archive", body)
    assert r.status == 200, r.body
    assert r.json() == {
        "incident_id": incident_id,
        "status": "resolved",
        "archived_to": f"error_archive/resolved/{incident_id}",
    }
    assert (root.bucket("resolved") / incident_id).is_dir()
    again = server.act(f"/api/incidents/{incident_id}/archive", body)
    assert again.status == 409 and again.json()["kind"] == "AlreadyArchived"
    cli_says = cli("archive", incident_id, "--resolved", "--reason", "x").err
    assert again.json()["error"] == cli_says.removeprefix("incidents: ").strip()
    assert server.act("/api/incidents/incident_nope/archive", body).status == 404


def test_archive_bodies_are_validated_by_the_cli_model(server: Server, cli: Cli) -> None:
    incident_id = capture(cli, message="x")
    path = f"/api/incidents/{incident_id}/archive"
    no_reason = server.act(path, {"bucket": "resolved", "reason": ""})
    assert no_reason.status == 400
    assert no_reason.json()["error"] == "archive: --reason is required (why is it closed?)"
    assert server.act(path, {"bucket": "gone", "reason": "x"}).status == 400
    extra = server.act(path, {"bucket": "resolved", "reason": "x", "force": True})
    assert extra.status == 400 and extra.json()["error"] == "force: unknown field"
    listed = server.call("POST", path, raw=b"[1]", token=server.token,
                         headers={"Content-Type": "application/json"})  # fmt: skip
    assert listed.status == 400
    broken = server.call("POST", path, raw=b'{"bucket": NaN}', token=server.token,
                         headers={"Content-Type": "application/json"})  # fmt: skip
    assert broken.status == 400 and "not valid JSON" in broken.json()["error"]
    text = server.call("POST", path, raw=b"bucket=resolved", token=server.token,
                       headers={"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert text.status == 415


def test_pause_and_resume(server: Server, root: Root) -> None:
    r = server.act("/api/pause", {"reason": "provider outage"})
    assert r.status == 200
    assert r.json()["paused"]["reason"] == "provider outage"
    info = pause.current(root)
    assert info is not None and info.reason == "provider outage"
    assert (
        server.act("/api/pause", {"reason": "  "}).json()["error"] == "pause: --reason is required"
    )
    back = server.act("/api/resume")
    assert back.json()["resumed"] is True and back.json()["was"]["reason"] == "provider outage"
    assert pause.current(root) is None
    assert server.act("/api/resume").json() == {"resumed": False, "was": None}


def test_the_openapi_document_lists_every_endpoint_and_the_cli_models(server: Server) -> None:
    doc = server.call("GET", "/api/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    listed = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert listed == {(e.method, e.path) for e in ENDPOINTS}
    schemas = doc["components"]["schemas"]
    for model, name in ((ResolveRequest, "resolve_request"), (ArchiveRequest, "archive_request"),
                        (PauseRequest, "pause_request"), (ResumeRequest, "resume_request")):  # fmt: skip
        committed = json.loads((REPO / "schemas" / f"{name}.schema.json").read_text())
        assert schemas[model.__name__]["properties"] == committed.get("properties", {})
    resolve = doc["paths"]["/api/escalations/{escalation_id}/resolve"]["post"]
    assert resolve["security"] == [{"bearer": []}]
    assert {"401", "403", "404", "409", "413"} <= set(resolve["responses"])


def test_a_hand_written_bundle_s_secrets_do_not_leave(
    server: Server, root: Root, tmp_path: Path
) -> None:
    """A bundle dropped by hand never met capture's redaction: the API redacts its texts."""
    from tests.bundles import drop

    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    folder = drop(root, "byhand", tmp_path, message=f"push failed with token {secret}",
                  error_signature=f"code | lint | push failed with token {secret}")  # fmt: skip
    incident_id = folder.name
    server.until("/api/incidents", lambda d: d["total"] == 1)
    listed = server.call("GET", "/api/incidents")
    assert listed.status == 200 and incident_id.encode() in listed.body
    detail = server.call("GET", f"/api/incidents/{incident_id}")
    assert detail.status == 200
    for body in (listed.body, detail.body):
        assert secret.encode() not in body and b"REDACTED" in body


def test_answers_match_the_openapi_document(
    server: Server, cli: Cli, fast: Path, root: Root
) -> None:
    """Every answer validates against the schema the document gives for it."""
    import jsonschema

    doc = server.call("GET", "/api/openapi.json").json()

    def check(name: str, answer: object) -> None:
        schema = {**doc, "$ref": f"#/components/schemas/{name}"}
        jsonschema.Draft202012Validator(schema).validate(answer)

    incident_id = escalate(cli, fast)
    run_id = server.call("GET", f"/api/incidents/{incident_id}").json()["incident"]["run_id"]
    open_one = capture(cli, message="to archive")
    check("Health", server.call("GET", "/api/health").json())
    check("IncidentList", server.call("GET", "/api/incidents?all=true").json())
    check("Incident", server.call("GET", f"/api/incidents/{incident_id}").json())
    check("Escalations", server.call("GET", f"/api/jobs/{run_id}/escalations").json())
    check(
        "Decision", server.act(f"/api/escalations/{incident_id}/resolve", {"guidance": "g"}).json()
    )
    check("Archived", server.act(f"/api/incidents/{open_one}/archive",
                                 {"bucket": "escalated", "reason": "r"}).json())  # fmt: skip
    check("Paused", server.act("/api/pause", {"reason": "r"}).json())
    check("Resumed", server.act("/api/resume").json())
    check("Error", server.call("GET", "/api/incidents/incident_nope").json())
    check("Error", server.call("POST", "/api/pause", {"reason": "r"}).json())
    with pytest.raises(jsonschema.ValidationError):  # the check can fail
        check("Archived", {"incident_id": incident_id})


def test_accept_fix_names_the_person_and_only_takes_a_fix_escalated_for_review(
    server: Server, cli: Cli, fast: Path, root: Root
) -> None:
    incident_id = escalate(cli, fast)
    path = f"/api/escalations/{incident_id}/resolve"
    nobody = server.act(path, {"guidance": "", "accept_fix": True})
    assert nobody.status == 400 and nobody.json()["error"].startswith("by: ")
    r = server.act(path, {"guidance": "", "accept_fix": True, "by": "ana"})
    assert r.status == 409 and "not escalated for review of its fix" in r.json()["error"]
    assert (root.bucket("escalated") / incident_id).is_dir()
