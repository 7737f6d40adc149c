"""A scripted model server on 127.0.0.1 that the tests own, answering in each API's own
format: OpenAI chat completions (aider through litellm), the OpenAI Responses API (codex)
and Anthropic Messages with tool use (claude). Streaming (server-sent events) and plain
JSON answers both.

What it answers is `mode`:
- `fix`: the model edits `fix_path` to `fix_content` — aider gets a whole-file edit in its
  reply; codex an `exec_command` tool call that writes the file, then a closing message; claude a
  `Read` of the file, a `Write` of it, then a closing message;
- `(status, headers)`: every request fails with that HTTP status, the body in the API's
  error format (429 rate limit, 529/503 overloaded, 401 authentication);
- `hang`: the request is read and never answered (until the server stops).

Every request is kept in `requests` (path, body) for the tests to look at.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE_IN, USAGE_OUT = 1200, 40


class ModelServer:
    def __init__(self) -> None:
        self.mode: Any = "fix"
        self.fix_path = ""
        self.fix_content = ""
        self.workdir = ""  # claude is given absolute paths
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server.requests.append((self.path, {}))
                if self.path.rstrip("/").endswith("/models"):
                    self.reply(200, {"object": "list", "data": [{"id": "test-model"}]})
                else:
                    self.reply(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                server.requests.append((self.path, body))
                server.answer(self, body)

            def reply(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def stream(self, events: Iterator[tuple[str | None, Any]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                for name, doc in events:
                    head = f"event: {name}\n" if name else ""
                    data = doc if isinstance(doc, str) else json.dumps(doc)
                    self.wfile.write(f"{head}data: {data}\n\n".encode())
                    self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # --- life ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def posts(self, word: str) -> list[dict[str, Any]]:
        return [body for path, body in self.requests if word in path]

    # --- answers -------------------------------------------------------------------------

    def answer(self, handler: Any, body: dict[str, Any]) -> None:
        path = handler.path
        api = (
            "anthropic" if "/messages" in path else "responses" if "/responses" in path else "chat"
        )
        if "count_tokens" in path:
            handler.reply(200, {"input_tokens": USAGE_IN})
            return
        if self.mode == "hang":
            self.stopping.wait(600)
            return
        if isinstance(self.mode, tuple):
            status, headers = self.mode
            handler.reply(status, error_doc(api, status), headers)
            return
        if api == "chat":
            chat(handler, body, self)
        elif api == "responses":
            responses(handler, body, self)
        else:
            anthropic(handler, body, self)


def error_doc(api: str, status: int) -> dict[str, Any]:
    kind = {
        401: "authentication_error",
        429: "rate_limit_error",
        529: "overloaded_error",
        503: "overloaded_error",
    }.get(status, "api_error")
    message = {
        401: "invalid x-api-key",
        429: "Rate limit reached for requests",
        529: "Overloaded",
        503: "Service Unavailable",
    }.get(status, "error")
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


# --- OpenAI chat completions (aider) -------------------------------------------------------


def chat(handler: Any, body: dict[str, Any], server: ModelServer) -> None:
    text = f"{server.fix_path}\n```python\n{server.fix_content}```\n"
    usage = {
        "prompt_tokens": USAGE_IN,
        "completion_tokens": USAGE_OUT,
        "total_tokens": USAGE_IN + USAGE_OUT,
    }
    model = body.get("model", "test-model")
    if not body.get("stream"):
        handler.reply(
            200,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                "usage": usage,
            },
        )
        return

    def events() -> Iterator[tuple[str | None, Any]]:
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model}
        yield None, {
            **base,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}],
        }
        yield None, {
            **base,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": usage,
        }
        yield None, "[DONE]"

    handler.stream(events())


# --- OpenAI Responses API (codex) ----------------------------------------------------------


def _has_output(body: dict[str, Any]) -> bool:
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output") for i in items
    )


def responses(handler: Any, body: dict[str, Any], server: ModelServer) -> None:
    usage = {
        "input_tokens": USAGE_IN,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": USAGE_OUT,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": USAGE_IN + USAGE_OUT,
    }
    if _has_output(body) or not server.fix_path:
        item: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Fixed it.", "annotations": []}],
        }
    else:
        script = f"cat > {server.fix_path} <<'EOF'\n{server.fix_content}EOF\n"
        item = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": script}),
            "status": "completed",
        }
    response = {
        "id": "resp_1",
        "object": "response",
        "model": body.get("model", "test-model"),
        "status": "completed",
        "output": [item],
        "usage": usage,
    }

    def events() -> Iterator[tuple[str | None, Any]]:
        yield "response.created", {
            "type": "response.created",
            "response": {**response, "status": "in_progress", "output": []},
        }
        yield "response.output_item.done", {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": item,
        }
        yield "response.completed", {"type": "response.completed", "response": response}

    handler.stream(events())


# --- Anthropic Messages (claude) -----------------------------------------------------------


def _tool_results(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            count += sum(
                1 for c in content if isinstance(c, dict) and c.get("type") == "tool_result"
            )
    return count


def anthropic(handler: Any, body: dict[str, Any], server: ModelServer) -> None:
    tools = {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}
    done = _tool_results(body)
    block: dict[str, Any]
    if "Write" not in tools or not server.fix_path or done >= 2:
        block = {"type": "text", "text": "Fixed it."}
        stop = "end_turn"
    else:
        path = os.path.join(server.workdir, server.fix_path)
        tool, args = (
            ("Read", {"file_path": path})
            if done == 0
            else ("Write", {"file_path": path, "content": server.fix_content})
        )
        block = {"type": "tool_use", "id": f"toolu_{done}", "name": tool, "input": args}
        stop = "tool_use"
    usage = {
        "input_tokens": USAGE_IN,
        "output_tokens": USAGE_OUT,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-test"),
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        handler.reply(200, message)
        return

    def events() -> Iterator[tuple[str | None, Any]]:
        yield "message_start", {
            "type": "message_start",
            "message": {
                **message,
                "content": [],
                "stop_reason": None,
                "usage": {**usage, "output_tokens": 1},
            },
        }
        if block["type"] == "text":
            yield "content_block_start", {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
            yield "content_block_delta", {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": block["text"]},
            }
        else:
            yield "content_block_start", {
                "type": "content_block_start",
                "index": 0,
                "content_block": {**block, "input": {}},
            }
            yield "content_block_delta", {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
            }
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        yield "message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": USAGE_OUT},
        }
        yield "message_stop", {"type": "message_stop"}

    handler.stream(events())
