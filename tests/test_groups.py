"""Issue 16: merging and splitting groups through the CLI, with the decision written into
every bundle it moves, and everything rebuilt from the bundles by `reindex`. Real folders,
real SQLite, real checks and a stand-in fixer."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from incidents.groups import group_record
from incidents.layout import Root
from tests.helpers import BROKEN, Cli, ctx_of, tree, use_config
from tests.stand_ins import on_path, stand_in

A_MSG = "Network timeout during receipt download"
B_MSG = "connection reset by peer during receipt download"


def cap(cli: Cli, message: str, *extra: str, step: str = "dl") -> str:
    r = cli("capture", "--step", step, "--message", message, *extra)
    assert r.code == 0, r.err
    return r.out.strip()


def doc(root: Root, incident_id: str) -> dict[str, Any]:
    _, folder = root.locate(incident_id)
    return dict(json.loads((folder / "incident.json").read_text()))


def rows(root: Root) -> dict[str, tuple[Any, ...]]:
    with sqlite3.connect(root.db_path) as conn:
        found = conn.execute(
            "SELECT incident_id, group_key, group_decisions, regression_of, regression_count "
            "FROM incidents"
        ).fetchall()
    return {r[0]: r[1:] for r in found}


def reindex_from_scratch(cli: Cli, root: Root) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    assert cli("reindex").code == 0


def test_merge_folds_later_captures_into_the_merged_group_and_reindex_rebuilds_it(
    cli: Cli, root: Root
) -> None:
    a = cap(cli, A_MSG)
    b = cap(cli, B_MSG)
    b_closed = cap(cli, B_MSG, "--no-dedupe")
    assert cli("archive", b_closed, "--resolved", "--reason", "gone").code == 0
    signature_b = doc(root, b)["error_signature"]
    r = cli("group", "merge", a, signature_b, "--reason", "one outage, token=abc123secretvalue99")
    assert r.code == 0, r.err
    assert b in r.out and b_closed in r.out
    target = doc(root, a)["error_signature"]
    for moved in (b, b_closed):  # open and closed: the decision is in each bundle
        group = doc(root, moved)["group"]
        assert group["key"] == target
        (decision,) = group["decisions"]
        assert decision["kind"] == "merge" and decision["from"] == signature_b
        assert decision["to"] == target and decision["by"] and decision["at"]
        assert "abc123secretvalue99" not in decision["reason"]  # redacted like all free text
    assert "group" not in doc(root, a)  # the group that stays is not moved
    # a repeat of B folds into A's open incident
    assert cap(cli, B_MSG) == a
    assert doc(root, a)["occurrences"] == 2
    live = rows(root)
    assert live[b][0] == target and json.loads(live[b][1])[0]["kind"] == "merge"
    # the mirror and capture's hints come back from the bundles alone
    (root.state / "groups").rename(root.state / "groups.lost")
    reindex_from_scratch(cli, root)
    assert rows(root) == live
    assert cap(cli, B_MSG) == a
    assert doc(root, a)["occurrences"] == 3


def test_status_shows_the_merge(cli: Cli, root: Root) -> None:
    a = cap(cli, A_MSG)
    b = cap(cli, B_MSG)
    assert cli("group", "merge", a, b, "--reason", "same outage").code == 0
    listing = cli("status").out
    line = next(ln for ln in listing.splitlines() if ln.startswith(b))
    assert "NOTE" in listing.splitlines()[0] and line.endswith("merged")
    one = cli("status", b).out
    assert f"group:           {doc(root, a)['error_signature']}" in one
    assert "merge at " in one and "same outage" in one
    detail = cli("status", b, "--json").json()["group"]
    assert detail == group_record(root, b)
    assert detail["decisions"][0]["reason"] == "same outage"
    listed = {d["incident_id"]: d for d in cli("status", "--json").json()["incidents"]}
    assert listed[b]["group_key"] == listed[a]["signature"]
    assert listed[b]["group_decisions"][0]["kind"] == "merge"


def test_a_merge_accepts_signature_keys(cli: Cli, root: Root) -> None:
    from incidents.signature import signature_key

    a = cap(cli, A_MSG)
    b = cap(cli, B_MSG)
    key_a = signature_key(doc(root, a)["error_signature"])
    key_b = signature_key(doc(root, b)["error_signature"])
    assert cli("group", "merge", key_a, key_b, "--reason", "same").code == 0
    assert doc(root, b)["group"]["key"] == doc(root, a)["error_signature"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["merge", "A", "B"], "--reason is required"),
        (["merge", "A", "B", "--reason", "  "], "--reason is required"),
        (["merge", "no such signature", "B", "--reason", "x"], "SIG_A 'no such signature'"),
        (["merge", "A", "unknown_incident_1", "--reason", "x"], "SIG_B 'unknown_incident_1'"),
        (["merge", "A", "A", "--reason", "x"], "already in the group"),
        (["split", "unknown_incident_1", "--reason", "x"], "no incident 'unknown_incident_1'"),
        (["split", "A"], "--reason is required"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    cli: Cli, root: Root, args: list[str], message: str
) -> None:
    ids = {"A": cap(cli, A_MSG), "B": cap(cli, B_MSG)}
    before = {k: v for k, v in tree(root.path).items() if not k.startswith(".state")}
    r = cli("group", *[ids.get(a, a) for a in args])
    assert r.code == 2
    assert message in r.err and len(r.err.strip().splitlines()) == 1, r.err
    after = {k: v for k, v in tree(root.path).items() if not k.startswith(".state")}
    assert after == before
    assert not (root.state / "groups").exists() or not os.listdir(root.state / "groups")


def test_group_help_names_the_forms_each_side_takes(cli: Cli) -> None:
    r = cli("group", "merge", "--help")
    assert r.code == 0
    assert "incident id" in r.out and "signature" in r.out and "24-hex" in r.out


def test_split_starts_a_group_of_its_own_and_repeats_go_to_the_old_group(
    cli: Cli, root: Root
) -> None:
    a = cap(cli, A_MSG)
    assert cli("group", "split", a, "--reason", "a different cause").code == 0
    group = doc(root, a)["group"]
    assert group["key"] == f"split:{a}"
    line = next(ln for ln in cli("status").out.splitlines() if ln.startswith(a))
    assert line.endswith(" split"), line  # not "splitd"
    assert group["decisions"][0]["from"] == doc(root, a)["error_signature"]
    # a repeat of its signature no longer folds into it: a new incident of the old group
    again = cap(cli, A_MSG)
    assert again != a and "group" not in doc(root, again)
    assert cap(cli, A_MSG) == again  # and repeats fold into that one
    assert cli("group", "split", a, "--reason", "again").code == 2
    # another group can be merged into the split one by its id
    b = cap(cli, B_MSG)
    assert cli("group", "merge", a, b, "--reason", "same as the split one").code == 0
    assert cap(cli, B_MSG) == a
    live = rows(root)
    reindex_from_scratch(cli, root)
    assert rows(root) == live
    assert cap(cli, A_MSG) == again and cap(cli, B_MSG) == a


def test_budgets_follow_the_merged_group(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One fixer attempt used under SIG_B counts for SIG_A once B is merged into A."""
    use_config(
        tmp_path, monkeypatch,
        '[checks]\ntools = ["ruff"]\n[policy]\nsignature_budget = 1\nescalation_threshold = 0\n'
        '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n',
    )  # fmt: skip
    stand_in(on_path(tmp_path, monkeypatch), "aider", "pass  # changes nothing")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.py").write_text(BROKEN)
    target = ["--workdir", str(ws), "--python-file", "f.py", "--no-dedupe"]
    b = cap(cli, "f.py is broken", *target, step="lint")
    assert cli("drive", b).code == 0
    assert len(ctx_of(root, b).ai_attempts) == 1  # B's one unit of budget
    a = cap(cli, "f.py does not parse at all", *target, step="lint")
    assert cli("group", "merge", a, b, "--reason", "the same breakage").code == 0
    assert cli("drive", a).code == 0
    ctx = ctx_of(root, a)
    assert ctx.escalation_kind == "budget_exhausted" and ctx.ai_attempts == []
    assert "(1/1)" in (ctx.escalation_reason or "")
    reindex_from_scratch(cli, root)  # the budget is derived from the folders again
    c = cap(cli, "f.py does not parse at all", *target, step="lint")
    assert cli("drive", c).code == 0
    assert ctx_of(root, c).escalation_kind == "budget_exhausted"


def test_a_review_card_shows_the_merge(cli: Cli, root: Root) -> None:
    a = cap(cli, A_MSG)
    b = cap(cli, B_MSG)
    assert cli("group", "merge", a, b, "--reason", "same outage").code == 0
    assert cli("archive", b, "--escalated", "--reason", "look at it").code == 0
    r = cli("review", "--stdout")
    assert r.code == 0
    assert f"group: {doc(root, a)['error_signature']}" in r.out
    assert "same outage" in r.out and "1 group decision(s)" in r.out


def test_a_signature_whose_incidents_were_all_split_can_still_be_merged(
    cli: Cli, root: Root
) -> None:
    """Its captures open its own group again; a merge of it sends them to the target."""
    a = cap(cli, A_MSG)
    b = cap(cli, B_MSG)
    assert cli("group", "split", b, "--reason", "a one-off").code == 0
    signature_b = doc(root, b)["error_signature"]
    r = cli("group", "merge", a, signature_b, "--reason", "the rest are the outage")
    assert r.code == 0, r.err
    assert "group" in doc(root, b) and doc(root, b)["group"]["key"] == f"split:{b}"
    assert cap(cli, B_MSG) == a


def test_explain_shows_the_group_its_decisions_and_its_members(cli: Cli, root: Root) -> None:
    """`incidents explain` of a merged incident: the group it is in, the decision that put
    it there, and the incidents of the whole group (not only of its own signature)."""
    a = cap(cli, A_MSG)
    b = cap(cli, B_MSG)
    assert cli("group", "merge", a, b, "--reason", "one outage").code == 0
    r = cli("explain", b, "--json")
    assert r.code == 0, r.err
    found = r.json()
    (decision,) = found["decisions"]["decisions"]
    assert decision["kind"] == "merge" and decision["reason"] == "one outage"
    assert found["decisions"]["group"] == doc(root, a)["error_signature"]
    assert a in {o["incident_id"] for o in found["group"]["others"]}
    text = cli("explain", b).out
    assert "group:" in text and "merge at" in text and "one outage" in text and a in text


def test_attempts_under_sig_b_after_a_merge_use_the_merged_groups_budget(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `group merge A B`, captures of SIG_B open incidents in A's group; the real aider
    tier (a stand-in executable on PATH that changes nothing) runs for them, and each
    attempt counts against the one budget of the group, whichever signature made it: the
    group's budget runs out on a SIG_B incident, which escalates with the budget reason,
    and a SIG_A incident after it does too. The mirror and a reindex agree."""
    use_config(
        tmp_path, monkeypatch,
        '[checks]\ntools = ["ruff"]\n[policy]\nsignature_budget = 2\nescalation_threshold = 0\n'
        '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n',
    )  # fmt: skip
    stand_in(on_path(tmp_path, monkeypatch), "aider", "print('looked, changed nothing')")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.py").write_text(BROKEN)
    target = ["--workdir", str(ws), "--python-file", "f.py"]
    a = cap(cli, "f.py does not parse at all", *target, step="lint")
    b = cap(cli, "f.py is broken", *target, step="lint")
    sig_a, sig_b = doc(root, a)["error_signature"], doc(root, b)["error_signature"]
    assert cli("group", "merge", a, b, "--reason", "the same breakage").code == 0
    assert cli("archive", b, "--escalated", "--reason", "superseded by A").code == 0

    assert cli("drive", a).code == 0  # 1 of the group's 2 units, under SIG_A
    assert len(ctx_of(root, a).ai_attempts) == 1
    # SIG_B, in A's group (--no-dedupe: a new incident, not an occurrence of escalated A)
    b2 = cap(cli, "f.py is broken", *target, "--no-dedupe", step="lint")
    assert b2 not in (a, b)
    assert (doc(root, b2)["error_signature"], doc(root, b2)["group"]["key"]) == (sig_b, sig_a)
    assert cli("drive", b2).code == 0  # 2 of 2, under SIG_B
    assert len(ctx_of(root, b2).ai_attempts) == 1
    ran = [t for i in (a, b2) for t in ctx_of(root, i).ai_attempts]
    assert [(t.agent, t.exit_code) for t in ran] == [("aider", 0)] * 2, ran  # it really ran

    b3 = cap(cli, "f.py is broken", *target, "--no-dedupe", step="lint")  # nothing left
    assert cli("drive", b3).code == 0
    ctx = ctx_of(root, b3)
    assert ctx.escalation_kind == "budget_exhausted" and ctx.ai_attempts == []
    # the reason names the budget that ran out: the group's, not SIG_B's own
    assert (
        f"retry budget of group {sig_a!r} exhausted (2/2: its signature {sig_b!r} was "
        "merged into it)" in (ctx.escalation_reason or "")
    ), ctx.escalation_reason
    a2 = cap(cli, "f.py does not parse at all", *target, "--no-dedupe", step="lint")  # SIG_A
    assert cli("drive", a2).code == 0
    assert ctx_of(root, a2).escalation_kind == "budget_exhausted"
    status = cli("status", "--all", "--json").json()
    assert {r["incident_id"]: r["group_key"] for r in status["incidents"]} == {
        i: sig_a for i in (a, b, b2, b3, a2)
    }
    reindex_from_scratch(cli, root)  # the budget is derived from the folders again
    b4 = cap(cli, "f.py is broken", *target, "--no-dedupe", step="lint")
    assert cli("drive", b4).code == 0
    assert ctx_of(root, b4).escalation_kind == "budget_exhausted"


def test_a_merge_survives_reindex_when_the_merged_incident_was_later_split(
    cli: Cli, root: Root
) -> None:
    """The bundle that recorded the merge later records a split too: its signature's
    captures still go where the merge sent them, live and after `reindex` (I5)."""
    a = cap(cli, "connection reset by peer", step="up")
    b = cap(cli, "upload timed out after 30s", step="up")
    assert cli("group", "merge", a, b, "--reason", "same").code == 0
    assert cli("group", "split", b, "--reason", "differs").code == 0
    kinds = [d["kind"] for d in doc(root, b)["group"]["decisions"]]
    assert kinds == ["merge", "split"]  # the history, in order
    assert cap(cli, "upload timed out after 31s", step="up") == a
    (root.state / "groups").rename(root.state / "groups.lost")
    reindex_from_scratch(cli, root)
    assert cap(cli, "upload timed out after 32s", step="up") == a


def test_a_merge_of_a_signature_whose_incidents_were_all_split_survives_reindex(
    cli: Cli, root: Root
) -> None:
    """No incident moves, so the decision is noted in the bundles of the signature's
    incidents (which stay where they are) for `reindex` to rebuild the alias from."""
    a = cap(cli, A_MSG)
    b = cap(cli, B_MSG)
    assert cli("group", "split", b, "--reason", "a one-off").code == 0
    signature_b = doc(root, b)["error_signature"]
    assert cli("group", "merge", a, signature_b, "--reason", "the rest").code == 0
    assert doc(root, b)["group"]["key"] == f"split:{b}"
    assert [d["kind"] for d in doc(root, b)["group"]["decisions"]] == ["split", "merge"]
    (root.state / "groups").rename(root.state / "groups.lost")
    reindex_from_scratch(cli, root)
    assert cap(cli, B_MSG) == a
