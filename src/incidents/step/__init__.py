"""The one driver of the escalation machine: load, decide, act, persist, close.

Nothing else writes `state.json`, `ai_attempts.json` or `run_result.json`, or moves an
incident between the inbox and the archive. The entry points are in `step.service`;
`step.close` is the close sequence (every command finishes an interrupted close before
it starts, so it imports only the storage modules and the document models); `step.tick`
is one tick and `step.actions` what it performs; `step.backlog` is what a pickup owes
the mirror; `step.seal` the seal that marks a state.json as the step service's own;
`step.quarantine` the escalated incident's self-contained bundle. This package imports
nothing at import time, so that importing `step.close` does not load the tick.
"""
