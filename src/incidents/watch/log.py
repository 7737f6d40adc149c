"""The watcher's structured log lines (text or JSON lines, on stderr) and its live display.

Every line goes through `Log.event(name, **fields)`: `--log-json` prints one JSON object a
line; otherwise `time level event key=value ...`. On a terminal (and without --log-json) a
rich live panel shows the counts per state and the incidents in flight above the log.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from typing import IO, Any

from incidents.redact import redact


def _fmt(value: Any) -> str:
    """A value of a text line: quoted when it holds a space or a quote, and then with every
    character that could end the line or drive a terminal (newline, ESC, C1 controls, bidi
    overrides, undecodable bytes) escaped, so a hostile folder name cannot forge a line."""
    text = str(value)
    if " " in text or not text or '"' in text or not text.isprintable():
        return _escaped(json.dumps(text, ensure_ascii=False))
    return text


def _escaped(line: str) -> str:
    """`line` with each character that is not printable written as a JSON escape (json
    escapes C0 controls itself, not DEL, C1 controls, format characters or surrogates)."""
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in line)


class Log:
    def __init__(self, *, as_json: bool = False, stream: IO[str] | None = None) -> None:
        self.as_json = as_json
        self.stream = stream or sys.stderr
        self.display: Display | None = None

    def event(self, name: str, /, **fields: Any) -> None:
        level = str(fields.pop("level", "info"))
        now = time.time()
        if self.as_json:
            doc = {"ts": round(now, 6), "level": level, "event": name, **fields}
            line = _escaped(json.dumps(doc, default=str, ensure_ascii=False))
        else:
            stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
            kv = " ".join(f"{k}={_fmt(v)}" for k, v in fields.items() if v not in (None, ""))
            line = _escaped(f"{stamp} {level:<5} {name} {kv}".rstrip())
        line = redact(line)  # reasons and messages may quote a hand-written bundle
        if self.display is not None:
            self.display.print(line)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()


class Display:
    """A rich Live panel: counts per outcome and the incidents in flight (terminals only)."""

    def __init__(self, root: str) -> None:
        from rich.console import Console
        from rich.live import Live

        self.root = root
        self.console = Console(stderr=True)
        self.counts: Counter[str] = Counter()
        self.inflight: dict[str, float] = {}
        self.live = Live(console=self.console, refresh_per_second=4, transient=True,
                         get_renderable=self.render)  # fmt: skip

    def __enter__(self) -> Display:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def print(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def render(self) -> Any:
        from rich.table import Table

        table = Table(title=f"incidents watch {self.root}", expand=False)
        table.add_column("state")
        table.add_column("count", justify="right")
        for name, n in sorted(self.counts.items()):
            table.add_row(name, str(n))
        now = time.monotonic()
        table.add_row("in flight", str(len(self.inflight)))
        for incident_id, since in list(self.inflight.items())[:10]:
            table.add_row(f"  {incident_id}", f"{now - since:.1f}s")
        return table
