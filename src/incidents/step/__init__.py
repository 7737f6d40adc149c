"""The one driver of the escalation machine: load, decide, act, persist, close.

Nothing else writes `state.json`, `ai_attempts.json` or `run_result.json`, or moves an
incident between the inbox and the archive. The entry points are in `step.service`;
`step.close` is the close sequence (stdlib only, so every command may finish an
interrupted close before it starts); `step.tick` is one tick and `step.actions` what
it performs; `step.backlog` is what a pickup owes the mirror; `step.quarantine` the
escalated incident's self-contained bundle. This package imports nothing at import time
so that `step.close` stays cheap.
"""
