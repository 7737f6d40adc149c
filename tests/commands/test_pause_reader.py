"""The pause error is addressed to its reader: an agent (`next`, `claim`) is told to wait,
never to run `incidents resume` (a person's decision the skills forbid it); a person
running `step` is told how a pause is lifted."""

from __future__ import annotations

from tests.handoff.conftest import waiting  # noqa: F401  (the fixture)
from tests.helpers import Cli


def test_an_agent_is_told_to_wait_a_person_how_to_resume(
    cli: Cli, waiting: str  # noqa: F811  (the fixture)
) -> None:
    assert cli("pause", "--reason", "deploy freeze").code == 0
    for argv in (("next", "--json"), ("claim", waiting, "--agent", "a", "--lease", "5m")):
        r = cli(*argv)
        assert r.code == 1 and "deploy freeze" in r.err and "try again later" in r.err, r.err
        assert "incidents resume" not in r.err
    r = cli("step", waiting)
    assert r.code == 1 and "a person runs `incidents resume`" in r.err, r.err
