"""`archive` and `resolve-escalation` take several ids or `--group G`: one decision for a
whole group, one line per incident; one that fails says why, the others are decided."""

from __future__ import annotations

from incidents.layout import Root
from tests.helpers import Cli, capture


def group_of_three(cli: Cli) -> tuple[list[str], str]:
    same = [capture(cli, message="upload to s3 failed: timeout", step="sync") for _ in range(3)]
    other = capture(cli, message="disk quota exceeded on /data", step="backup")
    return same, other


def test_a_whole_group_is_archived_then_resolved_one_line_each(cli: Cli, root: Root) -> None:
    same, other = group_of_three(cli)
    r = cli("archive", "--group", same[0], "--escalated", "--reason", "provider outage")
    assert r.code == 0, r.err
    lines = [f"{i}: escalated -> error_archive/escalated/{i}" for i in same]
    assert sorted(r.out.splitlines()) == sorted(lines)
    assert (root.inbox / other).is_dir()  # positive control: another group is left alone
    r = cli("resolve-escalation", "--group", same[1], "--guidance", "the provider is back")
    assert r.code == 0, r.err
    lines = [f"{i}: resolved -> error_archive/resolved/{i}" for i in same]
    assert sorted(r.out.splitlines()) == sorted(lines)
    assert all((root.bucket("resolved") / i).is_dir() for i in same)


def test_several_ids_one_unknown_the_others_are_decided(cli: Cli, root: Root) -> None:
    same, other = group_of_three(cli)
    unknown = "incident_20260101_000000_x_abcdef"
    r = cli("archive", same[0], unknown, other, "--resolved", "--reason", "done by hand")
    assert r.code == 1
    assert len(r.out.splitlines()) == 2 and unknown in r.err
    assert (root.bucket("resolved") / same[0]).is_dir() and (
        root.bucket("resolved") / other
    ).is_dir()
    r = cli("archive", same[1], same[2], "--escalated", "--reason", "r", "--json")
    assert r.code == 0 and [d["incident_id"] for d in r.json()] == same[1:]


def test_no_id_and_no_group_is_a_usage_error(cli: Cli, root: Root) -> None:
    capture(cli, message="m")
    assert cli("archive", "--resolved", "--reason", "r").code == 2
    assert cli("resolve-escalation", "--guidance", "g").code == 2
    r = cli("archive", "--group", "no such group", "--resolved", "--reason", "r")
    assert r.code != 0 and "no such group" in r.err
