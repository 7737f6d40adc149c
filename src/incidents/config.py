"""The one validated configuration: `Config`, and `load_config`, the one way to load it.

`Config` puts together one `Section` per table of incidents.toml. A feature owns its
table's model: `[checks]` is `checks.settings.ChecksSettings`, `[tiers]`
`fixers.settings.TiersSettings`, `[watch]` `watch.settings.WatchSettings`,
`[verification]` `verify.VerifySettings`; `[capture]` is built here from capture's own
stdlib table (`capture_config.CAPTURE_KEYS`), which capture checks without pydantic
(`config_file.read_table`). Finding and parsing the file is `incidents.config_file`'s.
A bad key or value is a `ConfigError` naming the file, the dotted key and the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationError, model_validator

from incidents.capture_config import CAPTURE_KEYS
from incidents.checks.profiles import BUILTIN_PROFILES
from incidents.checks.settings import ChecksSettings
from incidents.checks.tamper import KINDS as SUPPRESSION_KINDS
from incidents.config_check import TABLE_NAME, check_whole, retry_problem, tools_problem
from incidents.config_file import find_config, read_raw, root_from_raw
from incidents.config_section import Section
from incidents.errors import ConfigError, explain_validation
from incidents.fixers.settings import TiersSettings
from incidents.ladder import HandoffSettings
from incidents.mirror.settings import MirrorSettings
from incidents.notify.settings import NotifySettings
from incidents.verify import VerifySettings
from incidents.watch.settings import WatchSettings

__all__ = ["CaptureSettings", "Config", "PolicySettings", "load_config"]


def _capture(key: str, description: str) -> Any:
    """A `[capture]` field from capture's own table (defaults and bounds in one place)."""
    default, low, high = CAPTURE_KEYS[key]
    return Field(default=default, ge=low, le=high, description=description)


class CaptureSettings(Section):
    log_tail_bytes: int = _capture("log_tail_bytes", "how much of --log-file is kept")
    audit_tail_lines: int = _capture("audit_tail_lines", "how many lines of --audit-file are kept")
    dedupe: bool = _capture("dedupe", "fold repeats of an open incident into it")
    max_message_chars: int = _capture("max_message_chars", "the message is cut to this length")
    reproduce: bool = _capture(
        "reproduce", "`incidents run`: the failed command becomes a verification command"
    )
    regression_window_days: int = _capture(
        "regression_window_days",
        "a capture whose group has an incident resolved within this many days opens a new "
        "incident marked as its regression (0: off)",
    )


def _known_kind(kind: str) -> str:
    if kind not in SUPPRESSION_KINDS:
        raise ValueError(
            f"unknown suppression kind {kind!r}; the kinds are " + ", ".join(SUPPRESSION_KINDS)
        )
    return kind


class PolicySettings(Section):
    """How the escalation machine decides (seeds 001-003)."""

    strict_mode: bool = Field(default=False, description="style-only findings block success")
    enable_mechanical_autofix: bool = True
    max_transient_retries: int = Field(
        default=3, ge=0, le=20, description="re-checks of a transient failure before a fix"
    )
    retry_base_s: float = Field(default=5.0, ge=0, description="first backoff delay")
    retry_max_s: float = Field(default=300.0, ge=0, description="backoff cap")
    transient_quiet: float = Field(
        default=3600.0,
        ge=0,
        description="seconds a transient failure with nothing to re-run waits for its step "
        "to succeed; with no recurrence by then it closes as recovered",
    )
    signature_budget: int = Field(
        default=3, ge=0, description="fixer attempts per error signature, across incidents"
    )
    max_cost_usd_per_day: float | None = Field(
        default=None, ge=0, description="AI fixer spend per UTC day, all incidents (none: no limit)"
    )
    max_cost_usd_per_incident: float | None = Field(
        default=None, ge=0, description="AI fixer spend per incident (none: no limit)"
    )
    max_tokens_per_incident: int | None = Field(
        default=None, ge=0, description="AI fixer tokens (sent and received) per incident"
    )
    spend_limit: Literal["wait", "escalate"] = Field(
        default="wait",
        description="a spend limit reached: the incident waits (the next day, or until the "
        "limit is raised) or escalates as an infrastructure failure",
    )
    escalation_threshold: int = Field(
        default=5, ge=0, description="escalations within the window that pause everything (0: off)"
    )
    escalation_window_s: float = Field(default=3600.0, gt=0)
    max_regressions: int = Field(
        default=3,
        ge=0,
        le=1000,
        description="an incident whose group regressed more times than this escalates at "
        "once instead of going to the fixers",
    )
    lease_ttl_s: float = Field(default=600.0, gt=0, description="how long a worker's lease lasts")
    confirm_runs: int = Field(
        default=1,
        ge=1,
        le=20,
        description="runs a clean check of a test failure (tests or verification commands) "
        "needs before success, the findings cache bypassed; a finding seen in one run and "
        "not another is a hard `flaky` finding",
    )
    allow_suppressions: list[Annotated[str, AfterValidator(_known_kind)]] = Field(
        default_factory=list,
        description="kinds of suppression a fix may add on purpose (README: suppression kinds); "
        "every other one is a hard `tamper` finding",
        json_schema_extra={"items": {"enum": list(SUPPRESSION_KINDS), "type": "string"}},
    )


class Config(Section):
    root: str | None = Field(default=None, description="the reports root (relative to this file)")
    capture: CaptureSettings = Field(default_factory=CaptureSettings)
    checks: ChecksSettings = Field(default_factory=ChecksSettings)
    verification: VerifySettings = Field(default_factory=VerifySettings)
    tiers: TiersSettings = Field(default_factory=TiersSettings)
    handoff: HandoffSettings = Field(default_factory=HandoffSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    watch: WatchSettings = Field(default_factory=WatchSettings)
    mirror: MirrorSettings = Field(default_factory=MirrorSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    source: str | None = Field(default=None, exclude=True, description="the file it came from")

    @model_validator(mode="after")
    def _known_tools(self) -> Config:
        if self.checks.tools is not None:
            problem = tools_problem(
                self.checks.tools, list(BUILTIN_PROFILES), list(self.checks.profiles)
            )
            if problem:
                raise ValueError(f"checks.tools: {problem}")
        problem = retry_problem(self.policy.retry_base_s, self.policy.retry_max_s)
        if problem:
            raise ValueError(f"policy.retry_base_s: {problem}")
        return self


# The settings `status` (and the other read-only commands) read through
# `incidents.config_read`, stdlib only; their defaults are written into the table.
READ_KEYS = (
    ("mirror", "url"),
    ("mirror", "host"),
    ("mirror", "timeout_s"),
    ("watch", "leases"),
    ("watch", "reject_grace_s"),
)


def config_table() -> str:
    """`config_table.json`: the JSON Schema of `Config` (titles and descriptions left out)
    and the built-in check profiles, for `incidents.config_check` (capture's check of the
    whole file without pydantic)."""

    def strip(node: Any, names: bool = False) -> Any:
        """Without the words a check does not use; `names`: the keys are key names."""
        if isinstance(node, dict):
            return {
                k: strip(v, k in ("properties", "$defs") and not names)
                for k, v in node.items()
                if names or k not in ("title", "description", "default")
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    table = strip(Config.model_json_schema(mode="validation"))
    table["x-builtin-tools"] = sorted(BUILTIN_PROFILES)
    fields = PolicySettings.model_fields
    table["x-retry-defaults"] = [fields["retry_base_s"].default, fields["retry_max_s"].default]
    table["x-read-defaults"] = {  # what a read-only command reads without pydantic
        f"{name}.{key}": getattr(getattr(Config(), name), key) for name, key in READ_KEYS
    }
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def table_path() -> Path:
    return Path(__file__).resolve().parent / TABLE_NAME


def write_table() -> Path:
    from incidents.fsutil import atomic_write_text

    path = table_path()
    atomic_write_text(path, config_table())
    return path


def load_config(cli_config: str | None = None) -> Config:
    """The whole file, validated; the defaults when there is none."""
    path = find_config(cli_config)
    if path is None:
        return Config()
    raw = read_raw(path)
    check_whole(path, raw)  # capture's check, so both refuse alike and say it the same way
    try:
        cfg = Config.model_validate(raw)
    except ValidationError as exc:
        key, reason = explain_validation(exc, unknown="unknown key", show_input=True)
        raise ConfigError(str(path), key, reason) from exc
    cfg.source = str(path)
    cfg.root = root_from_raw(path, raw)
    return cfg
