"""`incidents serve`: the HTTP API, the event stream and the live dashboard over one root.

Reads come from the mirror (`incidents.mirror.feed`, on the server's own reader threads);
every action calls the service its CLI command calls (`commands.archive.close_by_hand`,
`commands.admin.pause_root`/`resume_root`, `handoff.resolve_escalation`). Its modules:

- `tokens`: the bearer token (`.state/serve.token`, 0600), made on first start, rotated;
- `problems`: the project's errors as HTTP statuses and JSON bodies, in one table;
- `guard`: loopback Host and same-Origin checks (ASGI middleware), and the action's door
  (token, size cap, the request model);
- `reader`: a thread with its own mirror connection, for reads off the event loop;
- `hub`: the catch-up loop (captures reach the mirror) and the poller that turns newly
  committed events into Server-Sent Events for every subscriber;
- `events`: an event's SSE name (seed 003's where they apply), id and encoding;
- `api` (reads), `actions` (writes), `stream` (`GET /api/events`), `page` (the dashboard
  at `/`, one page with inline CSS and JS under a strict CSP);
- `routes`: the one table of endpoints, from which `app` (the Starlette application) and
  `openapi` (the document at `/api/openapi.json`) are built;
- `run`: the bind rule, the socket, uvicorn and its log.

Nothing here is imported by capture or by any other command: starlette and uvicorn load
only when `incidents serve` runs.
"""
