"""What a fixer CLI said about its own run, read in each CLI's own output format.

- claude (`-p --output-format json`): one JSON object on stdout; `is_error`,
  `api_error_status` (the HTTP status of the API error it gave up on), `result` (its
  last message, or the error), `total_cost_usd`, `usage` and `modelUsage`.
- codex (`exec --json`): JSON Lines events on stdout; `turn.failed` / `error` events carry
  the API error's message ("exceeded retry limit, last status: 429 Too Many Requests",
  "unexpected status 401 Unauthorized: ..."), `turn.completed` the turn's `usage`, the
  last `agent_message` item its closing words.
- aider: plain text; it exits 0 whatever happened, so its litellm error lines are the
  only account of a failure (`litellm.RateLimitError: ...`, `litellm.AuthenticationError:
  ...`, `litellm.ServiceUnavailableError: ...`), and `Tokens: 1.2k sent, 40 received.
  Cost: $0.0042 message, ...` its spend. aider retries a rate limit or an overloaded
  server for over a minute on its own; `stop_rule` ends it at the first such line.

The fixer's own error code is one of `RATE_LIMIT`, `AUTH`, `OVERLOADED`, `TIMEOUT`, or
None (no API failure was reported: the edits are judged as usual).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from incidents.redact import redact

RATE_LIMIT, AUTH, OVERLOADED, TIMEOUT = "RATE_LIMIT", "AUTH", "OVERLOADED", "TIMEOUT"
MESSAGE_CHARS = 300

_AIDER_ERRORS = (
    (re.compile(r"litellm\.(?:RateLimitError|RouterRateLimitError)\b"), RATE_LIMIT),
    (re.compile(r"litellm\.(?:AuthenticationError|PermissionDeniedError)\b"), AUTH),
    (
        re.compile(
            r"litellm\.(?:ServiceUnavailableError|InternalServerError|BadGatewayError)\b"
            r"|overloaded_error|\b529\b"
        ),
        OVERLOADED,
    ),
    (re.compile(r"litellm\.Timeout\b"), TIMEOUT),
)
_AIDER_LINE = re.compile(r"litellm\.\w+: ")
_AIDER_TOKENS = re.compile(
    r"Tokens:\s+([\d.]+)(k?)\s+sent,(?:\s+[\d.]+k?\s+cache\s+\w+,)*\s+([\d.]+)(k?)\s+"
    r"received\.(?:\s+Cost:\s+\$([\d.]+)\s+message)?"
)
_STATUS = re.compile(r"\b(?:status:?|status code)\s*(\d{3})\b|\b(\d{3}) [A-Z][a-z]+", re.I)
_RETRY_AFTER = re.compile(r"retry[- ]after[^\d]{0,10}(\d+(?:\.\d+)?)\s*(ms|s)?", re.I)


@dataclass
class Readout:
    """The fixer's own account: its error `code` and `message` (redacted, short), how long
    to wait when it said (`retry_after_s`), and what the run spent."""

    code: str | None = None
    message: str = ""
    retry_after_s: float | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    result: str = ""  # its closing words, for the attempt's notes


def code_of_status(status: int | None) -> str | None:
    """The error code of an API's HTTP status: 429 a rate limit, 401/403 authentication,
    529 (Anthropic's overloaded) and 502/503/504 an overloaded or unavailable service."""
    if status == 429:
        return RATE_LIMIT
    if status in (401, 403):
        return AUTH
    if status in (502, 503, 504, 529):
        return OVERLOADED
    return None


def _short(text: str) -> str:
    one = " ".join(text.split())
    return redact(one[:MESSAGE_CHARS])


def _retry_after(text: str) -> float | None:
    m = _RETRY_AFTER.search(text)
    if m is None:
        return None
    value = float(m.group(1))
    return value / 1000 if (m.group(2) or "").lower() == "ms" else value


def _status_code(text: str) -> str | None:
    for m in _STATUS.finditer(text):
        code = code_of_status(int(m.group(1) or m.group(2)))
        if code is not None:
            return code
    lowered = text.lower()
    if "rate limit" in lowered or "too many requests" in lowered:
        return RATE_LIMIT
    if "overloaded" in lowered or "unavailable" in lowered:
        return OVERLOADED
    if "unauthorized" in lowered or "invalid api key" in lowered or "api key" in lowered:
        return AUTH
    return None


def read_claude(stdout: str) -> Readout:
    doc = _last_json_object(stdout)
    if doc is None:
        return Readout()
    out = Readout(result=str(doc.get("result") or ""))
    found = doc.get("usage")
    usage: dict[str, Any] = found if isinstance(found, dict) else {}
    out.input_tokens = _int(usage.get("input_tokens"))
    out.output_tokens = _int(usage.get("output_tokens"))
    if isinstance(doc.get("total_cost_usd"), (int, float)):
        out.cost_usd = float(doc["total_cost_usd"])
    models = doc.get("modelUsage")
    if isinstance(models, dict) and models:
        out.model = ", ".join(sorted(str(m) for m in models))
    if doc.get("is_error"):
        status = doc.get("api_error_status")
        out.code = code_of_status(status if isinstance(status, int) else None)
        out.code = out.code or _status_code(out.result)
        out.message = _short(out.result or str(doc.get("subtype") or "error"))
        out.retry_after_s = _retry_after(out.result)
    return out


def read_codex(stdout: str) -> Readout:
    out = Readout()
    failure = ""
    for line in stdout.splitlines():
        event = _json_line(line)
        if event is None:
            continue
        kind = event.get("type")
        if kind == "turn.completed" and isinstance(event.get("usage"), dict):
            usage = event["usage"]
            out.input_tokens = (out.input_tokens or 0) + (_int(usage.get("input_tokens")) or 0)
            out.output_tokens = (out.output_tokens or 0) + (_int(usage.get("output_tokens")) or 0)
        elif kind == "turn.failed" and isinstance(event.get("error"), dict):
            failure = str(event["error"].get("message") or "") or failure
        elif kind == "error" and event.get("message"):
            failure = failure or str(event["message"])
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            item = event["item"]
            if item.get("type") == "agent_message":
                out.result = str(item.get("text") or "")
    if failure:
        out.code = _status_code(failure)
        out.message = _short(failure)
        out.retry_after_s = _retry_after(failure)
    return out


def read_aider(text: str) -> Readout:
    out = Readout()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not _AIDER_LINE.match(line):
            continue
        for pattern, code in _AIDER_ERRORS:
            if pattern.search(line):
                # aider wraps at the terminal width: the message's tail is the next line
                more = lines[i + 1] if i + 1 < len(lines) and lines[i + 1][:1].strip() else ""
                out.code, out.message = code, _short(f"{line} {more}")
                out.retry_after_s = _retry_after(f"{line} {more}")
                break
        if out.code:
            break
    sent = received = cost = 0.0
    found = False
    for m in _AIDER_TOKENS.finditer(text):
        found = True
        sent += float(m.group(1)) * (1000 if m.group(2) else 1)
        received += float(m.group(3)) * (1000 if m.group(4) else 1)
        if m.group(5):
            cost += float(m.group(5))
            out.cost_usd = cost
    if found:
        out.input_tokens, out.output_tokens = int(sent), int(received)
    model = re.search(r"^(?:Main model|Model): (\S+)", text, re.M)
    out.model = model.group(1) if model else None
    return out


def read(tier: str, stdout: bytes, stderr: bytes) -> Readout:
    """The readout of `tier`'s run (an unknown tier, or a replaced program: what its
    output says in any of the three forms, tried in turn)."""
    out_text = stdout.decode("utf-8", "replace")
    err_text = stderr.decode("utf-8", "replace")
    if tier == "claude":
        return read_claude(out_text)
    if tier == "codex":
        return read_codex(out_text)
    if tier == "aider":
        return read_aider(f"{out_text}\n{err_text}")
    return Readout()


def stop_rule(tier: str) -> Callable[[bytes], str | None] | None:
    """For aider: a watcher of its output that answers at the first API error line it
    gives up on only after a minute or more of its own retries (a rate limit, an
    overloaded server) or that ends the run anyway (authentication)."""
    if tier != "aider":
        return None
    seen = bytearray()

    def rule(chunk: bytes) -> str | None:
        seen.extend(chunk)
        if len(seen) > 1 << 16:
            del seen[: len(seen) - (1 << 15)]
        text = seen.decode("utf-8", "replace")
        if "litellm." not in text or "\n" not in text[text.rindex("litellm.") :]:
            return None  # no error line yet, or not all of it
        found = read_aider(text)
        return found.code if found.code in (RATE_LIMIT, AUTH, OVERLOADED) else None

    return rule


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _json_line(line: str) -> dict[str, Any] | None:
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _last_json_object(text: str) -> dict[str, Any] | None:
    """claude's result object: the whole output, else its last line that is one."""
    try:
        doc = json.loads(text)
        if isinstance(doc, dict):
            return doc
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        found = _json_line(line)
        if found is not None:
            return found
    return None
