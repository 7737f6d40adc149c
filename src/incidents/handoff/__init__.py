"""Hand-off to outside agents (skills), and human decisions on escalations.

`handoff.queue`: what waits for an agent, `next_incident`, `claim`, the work item;
`handoff.workspace`: the workdir snapshot taken at a claim and what changed since;
`handoff.submit`: an agent's submission and a skill's attempt document;
`handoff.human`: a human's decision on an escalated incident.
"""

from incidents.decisions import read_guidance
from incidents.errors import NotWaiting
from incidents.handoff.human import Decision, resolve_escalation
from incidents.handoff.queue import (
    WorkItem,
    claim,
    next_incident,
    no_work,
    parse_ttl,
    validate_agent,
    work_item,
)
from incidents.handoff.submit import record_attempt, record_attempt_doc, submit

__all__ = [
    "Decision",
    "NotWaiting",
    "WorkItem",
    "claim",
    "next_incident",
    "no_work",
    "parse_ttl",
    "read_guidance",
    "record_attempt",
    "record_attempt_doc",
    "resolve_escalation",
    "submit",
    "validate_agent",
    "work_item",
]
