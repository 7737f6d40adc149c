"""The fixer ladder as configured now: which tiers an incident may climb, and how.

A tier's effective mode (`fixers.settings.resolve_enabled`: `auto` is `on` when its
program is on PATH) can change while an incident is open: a person installs aider, then
requeues an escalation. So the ladder is read again at every pickup (`refresh`), not
fixed at the first one; state.json records what the pickup read, and the quarantine
bundle's `enabled_tiers` is taken from that same record (`enabled`), so the two agree.

`[handoff]`: with no fixer program installed and no tier configured, a `code` incident
(one that needs a change in its files) waits for an outside agent, an agent skill
working `incidents next`, at the first `auto` tier, instead of escalating at once; any
hand-off waits at most `wait_s`, then escalates saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from incidents.config_section import Section
from incidents.fixers.settings import TIER_ORDER, TiersSettings, resolve_enabled
from incidents.vocab import FailureClass

if TYPE_CHECKING:
    from incidents.models import ErrorPipelineContext

DAY_S = 86400.0


class HandoffSettings(Section):
    wait_s: float = Field(
        default=DAY_S,
        ge=0,
        le=365 * DAY_S,
        description="how long an incident waits for an outside agent (a skill) to take and "
        "submit it before it escalates; with no fixer program installed and no tier "
        "configured, a code incident waits this long at the first auto tier (0: it "
        "escalates at once)",
    )


def modes(
    tiers: TiersSettings, handoff: HandoffSettings, failure_class: FailureClass | str
) -> dict[str, str]:
    """Each tier's mode for an incident of `failure_class` now: `on`, `off` or `handoff`.
    When every tier is off and at least one is `auto` (nothing installed, nothing
    configured off by hand), a code incident's first `auto` tier waits for an agent."""
    found = resolve_enabled(tiers)
    if (
        failure_class == FailureClass.CODE
        and handoff.wait_s > 0
        and all(mode == "off" for mode in found.values())
    ):
        first = next((n for n in TIER_ORDER if tiers.tier(n).mode == "auto"), None)
        if first is not None:
            found[first] = "handoff"
    return found


def apply(ctx: ErrorPipelineContext, tiers: TiersSettings, found: dict[str, str]) -> None:
    """Record the ladder `found` (from `modes`) in the context."""
    ctx.enable_aider = found["aider"] != "off"
    ctx.enable_codex = found["codex"] != "off"
    ctx.enable_claude = found["claude"] != "off"
    ctx.agent_max_attempts = {name: tiers.tier(name).max_attempts for name in TIER_ORDER}
    ctx.tier_modes = {name: "handoff" for name, mode in found.items() if mode == "handoff"}


def refresh(ctx: ErrorPipelineContext, tiers: TiersSettings, handoff: HandoffSettings) -> bool:
    """Read the ladder again into an open incident's context; True when it changed. Not
    while a step is pending (its redo must make the decision it journaled)."""
    if ctx.pending is not None or ctx.final_status is not None:
        return False
    before = _key(ctx)
    apply(ctx, tiers, modes(tiers, handoff, ctx.failure_class))
    agent = ctx.handoff_agent
    if ctx.waiting_for_input and agent in enabled(ctx) and agent not in ctx.tier_modes:
        # the hand-off stood in for a program that was missing: installed now, it runs
        ctx.end_handoff(f"{agent} is installed now")
    return before != _key(ctx)


def _key(ctx: ErrorPipelineContext) -> tuple[object, ...]:
    flags = (ctx.enable_aider, ctx.enable_codex, ctx.enable_claude)
    return (*flags, dict(ctx.tier_modes), dict(ctx.agent_max_attempts))


def enabled(ctx: ErrorPipelineContext) -> list[str]:
    """The tiers the context may climb (on or waiting for an agent), in ladder order."""
    flags = {"aider": ctx.enable_aider, "codex": ctx.enable_codex, "claude": ctx.enable_claude}
    return [name for name in TIER_ORDER if flags[name]]
