"""The watcher's schedule alone: queues, due times, incomplete bundles, what a pickup's
result does to its incident, and when a burst run is done. No processes, no files."""

from __future__ import annotations

import pytest

from incidents.watch.schedule import (
    MAX_ERRORS,
    RECHECK_INCOMPLETE_S,
    RETRY_BUSY_S,
    Mode,
    PickupResult,
    Schedule,
)

T = 1_000_000.0  # an epoch time


def drain(s: Schedule) -> list[str]:
    out = []
    while (incident_id := s.pop_ready()) is not None:
        out.append(incident_id)
    return out


def working(s: Schedule, incident_id: str) -> None:
    """Queue `incident_id`, take it off the queue and send it to a worker."""
    s.enqueue(incident_id)
    assert s.pop_ready() == incident_id
    s.found_ready(incident_id, (1, 2))
    s.start(incident_id)


def test_an_id_is_queued_once_in_arrival_order() -> None:
    s = Schedule()
    for incident_id in ["b", "a", "b", "c", "a"]:
        s.enqueue(incident_id)
    assert drain(s) == ["b", "a", "c"]
    assert s.pop_ready() is None
    s.enqueue("a")  # taken off the queue: it may be queued again
    assert drain(s) == ["a"]


def test_an_id_announced_while_it_runs_is_looked_at_again_after_its_pickup() -> None:
    s = Schedule()
    working(s, "a")
    s.enqueue("a")
    assert drain(s) == [] and s.rerun == {"a"}
    s.settle("a", PickupResult.IDLE, None, T)
    assert drain(s) == ["a"] and s.rerun == set()


@pytest.mark.parametrize(
    "result", [PickupResult.TERMINAL, PickupResult.GONE, PickupResult.REJECTED]
)
def test_a_closed_incident_is_not_looked_at_again_even_when_announced(
    result: PickupResult,
) -> None:
    s = Schedule()
    working(s, "a")
    s.enqueue("a")
    s.settle("a", result, None, T)
    assert drain(s) == [] and s.later == [] and s.taken == {}
    assert s.running == set() and s.rerun == set()


def test_a_pickup_due_later_waits_for_its_time_even_when_announced() -> None:
    s = Schedule()
    working(s, "a")
    s.enqueue("a")
    s.settle("a", PickupResult.LATER, T + 30, T)
    assert drain(s) == [] and s.deferred("a", T) and s.taken == {"a": (1, 2)}
    s.promote(T + 29.9)
    assert drain(s) == []
    s.promote(T + 30)
    assert drain(s) == ["a"] and not s.deferred("a", T)


@pytest.mark.parametrize("result", [PickupResult.BUSY, PickupResult.LOST, PickupResult.PAUSED])
def test_busy_lost_and_paused_are_retried_after_a_second(result: PickupResult) -> None:
    s = Schedule()
    working(s, "a")
    s.settle("a", result, None, T)
    assert s.later == [(T + RETRY_BUSY_S, "a")]
    s.promote(T + RETRY_BUSY_S)
    assert drain(s) == ["a"]


@pytest.mark.parametrize(
    "result", [PickupResult.BUSY, PickupResult.LOST, PickupResult.PAUSED, PickupResult.ERROR]
)
def test_a_retry_waits_its_back_off_even_when_announced_while_it_ran(
    result: PickupResult,
) -> None:
    """The inbox listed (or an event) while a pickup ran that then failed or found the
    incident busy: the announcement came before the result, and must not make the watcher
    pick it up again at once (a bundle that cannot load was counted twice per run)."""
    s = Schedule()
    working(s, "a")
    s.enqueue("a")
    s.settle("a", result, None, T)
    assert drain(s) == [] and s.rerun == set()
    s.promote(T + RETRY_BUSY_S)
    assert drain(s) == ["a"]


def test_a_failure_past_the_last_retry_is_not_run_again_when_announced() -> None:
    s = Schedule()
    for _ in range(MAX_ERRORS - 1):
        working(s, "a")
        s.settle("a", PickupResult.ERROR, None, T)
        s.promote(T + RETRY_BUSY_S)
        assert drain(s) == ["a"]
    working(s, "a")
    s.enqueue("a")
    s.settle("a", PickupResult.ERROR, None, T)
    assert drain(s) == [] and s.later == [] and s.rerun == set()


def test_a_yielded_pickup_is_queued_again_at_once() -> None:
    s = Schedule()
    working(s, "a")
    s.settle("a", PickupResult.YIELDED, None, T)
    assert drain(s) == ["a"] and s.later == []


@pytest.mark.parametrize("result", [PickupResult.WAITING, PickupResult.IDLE, PickupResult.STOPPED])
def test_waiting_idle_and_stopped_leave_the_incident_be(result: PickupResult) -> None:
    s = Schedule()
    working(s, "a")
    s.settle("a", result, None, T)
    assert drain(s) == [] and s.later == [] and s.running == set()
    assert s.stats.results == {result: 1}


def test_errors_are_retried_until_the_third() -> None:
    s = Schedule()
    for n in range(1, MAX_ERRORS + 1):
        working(s, "a")
        s.settle("a", PickupResult.ERROR, None, T)
        assert bool(s.due) is (n < MAX_ERRORS)
        s.promote(T + RETRY_BUSY_S)
        drain(s)
    assert s.errors["a"] == MAX_ERRORS
    assert s.stats.results == {PickupResult.ERROR: MAX_ERRORS}


def test_a_new_due_time_replaces_the_old_one() -> None:
    s = Schedule()
    s.defer("a", T + 10)
    s.defer("a", T + 1)
    s.promote(T + 1)
    assert drain(s) == ["a"]
    s.promote(T + 10)  # the earlier entry of the heap is stale
    assert drain(s) == []


def test_a_listing_does_not_queue_what_is_not_due() -> None:
    s = Schedule()
    s.defer("a", T + 5)
    assert s.deferred("a", T) and not s.deferred("a", T + 5) and not s.deferred("b", T)


def test_the_loop_sleeps_until_the_next_due_time_or_recheck() -> None:
    s = Schedule()
    assert s.next_delay(T, 5.0) == 5.0
    s.defer("a", T + 2)
    assert s.next_delay(T, 5.0) == 2.0
    assert s.next_delay(T + 3, 5.0) == 0.0
    s.found_incomplete("b", settled=True)
    assert s.next_delay(T, 5.0) == RECHECK_INCOMPLETE_S


def test_an_incomplete_bundle_is_looked_at_again_every_recheck() -> None:
    s = Schedule()
    s.enqueue("a")
    assert s.pop_ready() == "a"
    assert s.found_incomplete("a", settled=False) is True  # logged the first time only
    s.enqueue("a")  # its events while it is incomplete queue nothing
    assert drain(s) == []
    s.recheck_incomplete(100.0)
    assert drain(s) == ["a"]
    assert s.found_incomplete("a", settled=False) is False
    s.recheck_incomplete(100.0 + RECHECK_INCOMPLETE_S / 2)
    assert drain(s) == []
    s.recheck_incomplete(100.0 + RECHECK_INCOMPLETE_S)
    assert drain(s) == ["a"]


def test_what_is_known_of_a_folder_follows_what_intake_found() -> None:
    s = Schedule()
    s.whole["a"] = 123
    s.found_incomplete("a", settled=False)
    assert s.whole == {"a": 123} and s.changing == {"a"}
    s.found_incomplete("a", settled=True)
    assert s.changing == set()
    s.found_ready("a", (7, 8))
    assert s.whole == {} and s.taken == {"a": (7, 8)}
    s.found_incomplete("a", settled=True)  # changed after it was taken: wait again
    assert s.taken == {}
    s.whole["a"] = 124
    s.found_ready("a", (7, 8))
    s.found_unusable("a")
    assert s.whole == {} and s.taken == {} and s.changing == set()


def test_a_crashed_worker_s_incident_is_worked_again_soon() -> None:
    s = Schedule()
    working(s, "a")
    s.start_pass()
    s.crashed("a", T)
    assert s.running == set() and s.stats.crashed == 1
    assert [i for _, i in s.later] == ["a"] and s.later[0][0] < T + RETRY_BUSY_S
    s.crashed(None, T)  # an idle worker died
    assert s.stats.crashed == 2


def test_once_ends_when_the_first_pass_is_worked() -> None:
    s = Schedule()
    for incident_id in ["a", "b"]:
        s.enqueue(incident_id)
    s.start_pass()
    s.enqueue("c")  # arrived after the start
    assert not s.finished(Mode.ONCE, None)
    assert s.pop_ready() == "a"
    s.start("a")
    s.settle("a", PickupResult.TERMINAL, None, T)
    assert not s.finished(Mode.ONCE, None)  # b is still queued
    assert s.pop_ready() == "b"
    s.start("b")
    assert not s.finished(Mode.ONCE, None)  # b is running
    s.settle("b", PickupResult.WAITING, None, T)
    assert s.finished(Mode.ONCE, None)  # c was not in the first pass
    assert not s.finished(Mode.FOREVER, None)


def test_until_idle_waits_for_queued_due_and_changing_incidents() -> None:
    s = Schedule()
    assert s.finished(Mode.UNTIL_IDLE, None)
    s.enqueue("a")
    assert not s.finished(Mode.UNTIL_IDLE, None)
    assert s.pop_ready() == "a"
    s.found_incomplete("a", settled=False)
    assert not s.finished(Mode.UNTIL_IDLE, None)  # still changing
    s.found_incomplete("a", settled=True)
    assert s.finished(Mode.UNTIL_IDLE, None)  # settled and incomplete: left for rejection
    s.defer("b", T + 60)
    assert not s.finished(Mode.UNTIL_IDLE, None)


def test_max_items_stops_dispatching_and_ends_when_the_last_comes_back() -> None:
    s = Schedule()
    working(s, "a")
    assert s.limit_reached(1) and not s.limit_reached(2) and not s.limit_reached(None)
    assert not s.finished(Mode.FOREVER, 1)
    s.settle("a", PickupResult.IDLE, None, T)
    assert s.finished(Mode.FOREVER, 1)
    assert s.stats.dispatched == 1


def test_a_worker_gone_while_stopping_leaves_nothing_running() -> None:
    s = Schedule()
    working(s, "a")
    s.abandon("a")
    s.abandon(None)
    assert s.running == set() and s.later == [] and s.stats.crashed == 0


def test_results_print_as_their_values() -> None:
    assert [str(r) for r in PickupResult] == [
        "terminal", "waiting", "later", "idle", "yielded", "busy", "lost", "paused",
        "gone", "rejected", "error", "stopped",
    ]  # fmt: skip
    assert f"{PickupResult.LATER}" == "later" and PickupResult("busy") is PickupResult.BUSY


def test_the_schedule_imports_no_io() -> None:
    import ast
    from pathlib import Path

    import incidents.watch.schedule as schedule

    tree = ast.parse(Path(schedule.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (
            node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
        )
    }
    assert imported <= {"__future__", "collections", "dataclasses", "enum", "heapq"}, imported
