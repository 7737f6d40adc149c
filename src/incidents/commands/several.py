"""One decision for several incidents: the ids given, and `--group G`'s members in the
bucket the decision applies to (`archive`: the open ones; `resolve-escalation`: the
escalated ones). Each incident is decided on its own and gets its own line; one that fails
says why and the others are still decided."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from incidents import output
from incidents.errors import IncidentsError, NotFound, UsageError
from incidents.layout import Root, validate_id


def check_ids(ids: list[str] | None, group: str | None, command: str) -> list[str]:
    """The ids given, each valid and once; at least one id or a group."""
    given = list(dict.fromkeys(validate_id(i) for i in ids or []))
    if not given and group is None:
        raise UsageError(f"{command}: give one or more IDs, or --group G")
    if group is not None and not group.strip():
        raise UsageError(f"{command}: --group is empty")
    return given


def members(root: Root, group: str, bucket: str) -> list[str]:
    """The incidents in `bucket` of the group `group` names: an incident id (its group), a
    group key, a signature or the 24-hex key of either, as `group merge` reads them."""
    from incidents import groups, mirror

    conn = mirror.connect(root.db_path)
    try:
        mirror.catch_up(conn, root)
        key = groups.resolve_side(conn, group, "--group")
        ids = [i for i, _, _ in mirror.group_members(conn, key)]
    finally:
        conn.close()
    found = [i for i in ids if (root.bucket(bucket) / i).is_dir()]
    if not found:
        raise NotFound(f"--group {group[:200]!r}: no {bucket} incident in that group")
    return found


def decide_each(
    ids: list[str],
    decide: Callable[[str], dict[str, Any]],
    line: Callable[[dict[str, Any]], str],
    as_json: bool,
    one: bool,
) -> int:
    """Apply `decide` to each id in turn: one line each (`line` of its answer), or with
    `as_json` the answer (`one`: a single id was asked for, its answer alone, as before;
    else a list, a failure as `{"incident_id", "error"}`). Exit 1 when any failed."""
    answers: list[dict[str, Any]] = []
    failed = 0
    for incident_id in ids:
        try:
            done = decide(incident_id)
        except IncidentsError as exc:
            if one:
                raise
            failed += 1
            answers.append({"incident_id": incident_id, "error": str(exc)})
            if not as_json:
                output.err(f"incidents: {incident_id}: {exc}")
            continue
        answers.append(done)
        if not as_json:
            output.out(line(done))
    if as_json:
        output.out_json(answers[0] if one else answers)
    return 1 if failed else 0
