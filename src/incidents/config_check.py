"""The whole of incidents.toml checked with the standard library alone, so that capture
refuses what every other command refuses and still starts without pydantic.

The table it checks against, `config_table.json` (beside this module), is generated from
the pydantic models (`incidents.config.config_table`; `incidents schemas --write` rewrites
it, and a test fails when it is stale): the JSON Schema of `incidents.config.Config`. What
a JSON Schema cannot say is a named rule (`"x-rule"` in the table) whose function lives
here and is called by the models' validators too, so there is one source for each rule:

- every table's keys (an unknown key is an error), every value's type (TOML's integers
  count as numbers, never the reverse), bounds, patterns, enumerations and list lengths;
- numbers are finite (`inf` and `nan` are refused everywhere);
- `checks.tools` names built-in check profiles or ones `[checks.profiles]` defines, each
  once; `[policy] retry_base_s` is at most `retry_max_s`;
- the rules `argv_template` (a fixer tier's command), `programs` (`[verification] allow`)
  and `workdirs` (`[verification] workdirs`).

A JSON Schema's `required` is not enforced: a table's defaults fill what it leaves out
(`[tiers.aider]` without `argv` keeps the built-in command).
"""

from __future__ import annotations

import os
import re

from incidents.errors import ConfigError

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

TABLE_NAME = "config_table.json"
PLACEHOLDERS = ("files", "own_sandbox", "prompt", "prompt_file", "workdir")
# `{{` and `}}` are literal braces (matched first, so never read as a placeholder)
_PLACEHOLDER_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")

_table: dict[str, Any] | None = None


class _Bad(Exception):
    def __init__(self, key: str, reason: str) -> None:
        super().__init__(key, reason)
        self.key, self.reason = key, reason


# --- the named rules (the models' validators call these too) -------------------------------


def argv_template_problem(argv: list[str]) -> str | None:
    """Why a fixer tier's argv template is refused, or None."""
    if not argv:
        return None  # the length is the schema's business
    if not argv[0] or any(m.group(1) is not None for m in _PLACEHOLDER_RE.finditer(argv[0])):
        return "the program (first element) must be a plain name or path"
    for element in argv:
        for match in _PLACEHOLDER_RE.finditer(element):
            name = match.group(1)
            if name is None:
                continue  # a literal brace
            if name not in PLACEHOLDERS:
                known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                return f"unknown placeholder {{{name}}} in {element!r} ({known})"
            if name == "files" and element != "{files}":
                return f"{{files}} must be an argv element on its own: {element!r}"
    return None


def programs_problem(entries: list[str]) -> str | None:
    """Why `[verification] allow` is refused: bare names, or absolute paths."""
    for entry in entries:
        if not entry.strip():
            return "an empty program name"
        is_path = os.sep in entry or bool(os.altsep and os.altsep in entry)
        if is_path and not os.path.isabs(os.path.expanduser(entry)):
            return f"{entry!r}: a program path must be absolute (or a bare name)"
    return None


def workdirs_problem(entries: list[str]) -> str | None:
    from incidents.bundle_rules import workdirs_problem

    return workdirs_problem(entries)


def webhook_url_problem(url: str) -> str | None:
    """Why a webhook's URL is refused beyond its pattern: a host and a port that parse (the
    value is a secret: not quoted)."""
    import urllib.parse  # only a config with a webhook pays for it (capture's path)

    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (it raises for a port that is no number)
    except ValueError:
        return "its host or port does not parse"
    return None if host else "it names no host"


RULES: dict[str, Callable[[Any], str | None]] = {
    "webhook_url": webhook_url_problem,
    "argv_template": argv_template_problem,
    "programs": programs_problem,
    "workdirs": workdirs_problem,
}


def tools_problem(tools: list[str], builtin: list[str], defined: list[str]) -> str | None:
    """Why `checks.tools` is refused: a name that is neither built in nor defined, or one
    named twice (its checks would run twice)."""
    for i, name in enumerate(tools):
        if name not in builtin and name not in defined:
            known = ", ".join(sorted({*builtin, *defined}))
            return f"unknown tool {name!r} (known: {known})"
        if name in tools[:i]:
            return f"tool {name!r} is named twice"
    return None


def retry_problem(base: float, cap: float) -> str | None:
    """Why `[policy] retry_base_s` is refused against `retry_max_s` (either may be the
    default): the first backoff delay may not exceed the cap."""
    if base > cap:
        return f"{base:g}s is more than retry_max_s ({cap:g}s), the cap of every backoff delay"
    return None


# --- the walk --------------------------------------------------------------------------------


def table() -> dict[str, Any]:
    """The generated table (read once)."""
    global _table
    if _table is None:
        import json

        with open(os.path.join(os.path.dirname(__file__), TABLE_NAME), "rb") as fh:
            _table = json.loads(fh.read())
    return _table


def check_whole(
    path: str | os.PathLike[str], raw: dict[str, Any], schema: dict[str, Any] | None = None
) -> None:
    """Raise a `ConfigError` naming `path`, the dotted key and the reason for the first
    thing in `raw` (the parsed file) that the models would refuse."""
    schema = table() if schema is None else schema
    try:
        _check(raw, schema, schema.get("$defs", {}), "")
        checks = raw.get("checks")
        if isinstance(checks, dict) and isinstance(checks.get("tools"), list):
            profiles = checks.get("profiles")
            defined = list(profiles) if isinstance(profiles, dict) else []
            problem = tools_problem(checks["tools"], schema["x-builtin-tools"], defined)
            if problem:
                raise _Bad("checks.tools", problem)
        policy = raw.get("policy")
        if isinstance(policy, dict):
            base, cap = schema["x-retry-defaults"]
            problem = retry_problem(
                policy.get("retry_base_s", base), policy.get("retry_max_s", cap)
            )
            if problem:
                raise _Bad("policy.retry_base_s", problem)
    except _Bad as bad:
        raise ConfigError(str(path), bad.key, bad.reason) from None


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
_BOUNDS = (
    ("minimum", ">="),
    ("maximum", "<="),
    ("exclusiveMinimum", ">"),
    ("exclusiveMaximum", "<"),
)
_WORDS = {
    "object": "a table",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
}


def _join(key: str, part: str | int) -> str:
    return f"{key}.{part}" if key else str(part)


def _check(value: Any, node: dict[str, Any], defs: dict[str, Any], key: str) -> None:
    if node.get("writeOnly"):  # a secret (a webhook's URL): the error never echoes it
        try:
            _check(value, {k: v for k, v in node.items() if k != "writeOnly"}, defs, key)
        except _Bad as bad:
            raise _Bad(bad.key, bad.reason.partition(", got ")[0]) from None
        return
    if "$ref" in node:
        _check(value, defs[node["$ref"].rsplit("/", 1)[-1]], defs, key)
        for word, extra in node.items():  # a field's own keywords beside its reference
            if word != "$ref":
                _check(value, {word: extra}, defs, key)
        return
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]  # TOML has no null
        first: _Bad | None = None
        for option in options:
            try:
                _check(value, option, defs, key)
                break
            except _Bad as bad:
                first = first or bad
        else:
            if first is not None:
                raise first
    kind = node.get("type")
    if kind is not None:
        _check_type(value, kind, key)
    if isinstance(value, float) and value - value != 0:  # inf or nan (no `math` import)
        raise _Bad(key, f"must be a finite number, got {value!r}")
    _check_value(value, node, key)
    if isinstance(value, list):
        if "items" in node:
            for i, item in enumerate(value):
                _check(item, node["items"], defs, _join(key, i))
    elif isinstance(value, dict):
        _check_table(value, node, defs, key)
    rule = node.get("x-rule")
    if rule is not None:
        problem = RULES[rule](value)
        if problem:
            raise _Bad(key, problem)


def _check_type(value: Any, kind: str, key: str) -> None:
    if isinstance(value, bool) and kind != "boolean" or not isinstance(value, _TYPES[kind]):
        raise _Bad(key, f"must be {_WORDS[kind]}, got {value!r}"[:200])


def _search(pattern: str, value: str) -> re.Match[str] | None:
    """A JSON Schema pattern as pydantic reads it: its `$` is the end of the text, where
    Python's also matches before a final newline (a URL ending in one passed here)."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + "\\Z"
    return re.search(pattern, value)


def _check_value(value: Any, node: dict[str, Any], key: str) -> None:
    if "enum" in node and value not in node["enum"]:
        choices = ", ".join(repr(v) for v in node["enum"])
        raise _Bad(key, f"must be one of {choices}, got {value!r}")
    if "const" in node and value != node["const"]:
        raise _Bad(key, f"must be {node['const']!r}, got {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        for word, says in _BOUNDS:
            bound = node.get(word)
            if bound is None:
                continue
            ok = {">=": value >= bound, "<=": value <= bound, ">": value > bound}.get(says)
            if not (value < bound if ok is None else ok):
                raise _Bad(key, f"must be {says} {bound}, got {value!r}")
    if isinstance(value, str):
        if "pattern" in node and _search(node["pattern"], value) is None:
            raise _Bad(key, f"must match {node['pattern']}, got {value!r}")
        if len(value) < node.get("minLength", 0):
            raise _Bad(key, f"must have at least {node['minLength']} character(s)")
    if isinstance(value, list):
        if len(value) < node.get("minItems", 0):
            raise _Bad(key, f"must have at least {node['minItems']} item(s)")
        if "maxItems" in node and len(value) > node["maxItems"]:
            raise _Bad(key, f"must have at most {node['maxItems']} item(s)")


def _check_table(
    value: dict[str, Any], node: dict[str, Any], defs: dict[str, Any], key: str
) -> None:
    properties = node.get("properties", {})
    extra = node.get("additionalProperties", True)
    for name, item in value.items():
        where = _join(key, name)
        if name in properties:
            _check(item, properties[name], defs, where)
        elif extra is False:
            raise _Bad(where, "unknown key")
        elif isinstance(extra, dict):
            _check(item, extra, defs, where)
