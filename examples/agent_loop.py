#!/usr/bin/env python3
"""An agent loop on seed 003's signature tracker (README: "Loop APIs: the signature tracker").

    python examples/agent_loop.py --root /tmp/agent-demo

A fake agent works two tasks against a real reports root. The first fails the same way
until its prompt carries a person's guidance: the tracker grants retries, each with a
retry context for the next prompt, until the signature's budget is spent, then escalates
(an incident in error_archive/escalated/, shown by `incidents status --all` and
`incidents review`). A person's guidance resets the budget and the next try succeeds.
The second task fails with a refused permission: never retried, escalated at once.
The loop stops when the root is paused (the global escalation threshold).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable

from incidents.tracker import Decision, ErrorSignatureTracker

Agent = Callable[[str], str]


def totals_agent(prompt: str) -> str:
    """Gets the totals wrong until told to work in cents."""
    if "in cents" not in prompt:
        raise ValueError("totals do not add up: 41.99 != 42.00 for invoice 7731")
    return "totals fixed: amounts summed in integer cents"


def deploy_agent(prompt: str) -> str:
    raise PermissionError(13, "Permission denied", "/srv/deploy/current")


def run_task(tracker: ErrorSignatureTracker, task: str, agent: Agent) -> Decision | None:
    """Call `agent` until it succeeds (None) or the tracker escalates (the decision)."""
    prompt = task
    while True:
        try:
            result = agent(prompt)
        except Exception as exc:  # the loop's tool dispatch: every failure goes to the tracker
            decision = tracker.record_and_check(exc, tried=f"prompt of {len(prompt)} chars")
            print(f"  {decision.action}: {decision.reason} [{decision.signature}]")
            if not decision.retry:  # escalated, or the root is paused: stop this task
                return decision
            assert decision.retry_context is not None
            prompt = f"{task}\n\n{decision.retry_context.render()}"
            if decision.guidance:
                prompt += f"\n\nA person's guidance: {decision.guidance}"
            continue
        print(f"  done: {result}")
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", help="the reports root (default: a new temporary folder)")
    args = parser.parse_args(argv)
    root = args.root or tempfile.mkdtemp(prefix="agent-loop-")
    checkpoint: dict[str, dict[str, int]] = {"retry_counts": {}}  # what the loop saves
    workdir = os.path.dirname(os.path.abspath(__file__))  # where the tasks' files would be
    tracker = ErrorSignatureTracker(
        root, checkpoint["retry_counts"], step="agent_loop", workdir=workdir
    )
    print(f"reports root: {root}")

    print("task 1: fix the invoice totals")
    decision = run_task(tracker, "Fix the invoice totals.", totals_agent)
    if decision is not None and tracker.global_threshold_exceeded():
        print("the root is paused (global escalation threshold): stopping")
        return 1
    if decision is not None:
        print(f"  escalated as {decision.incident_id}; a person answers:")
        tracker.reset_signature(decision.signature, "sum the amounts in cents, not floats")
        run_task(tracker, "Fix the invoice totals.", totals_agent)

    print("task 2: deploy")
    decision = run_task(tracker, "Deploy the release.", deploy_agent)
    if decision is not None and tracker.global_threshold_exceeded():
        print("the root is paused (global escalation threshold): stopping")
        return 1
    print(f"checkpoint retry_counts: {checkpoint['retry_counts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
