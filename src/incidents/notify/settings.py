"""`[notify]` in incidents.toml: where alerts go and how delivery retries.

```toml
[notify]
retry_base_s = 10

[[notify.webhooks]]
url = "https://hooks.slack.com/services/T000/B000/XXXX"
format = "slack"                    # {"text": ...}; "json" (the default): the whole alert
events = ["escalation", "pause"]    # default: every event (and regression, spend_limit)
```
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from incidents.config_check import webhook_url_problem
from incidents.config_section import Section

Event = Literal["escalation", "pause", "regression", "spend_limit"]
EVENTS: tuple[Event, ...] = ("escalation", "pause", "regression", "spend_limit")


class Webhook(Section):
    url: str = Field(
        pattern=r"^https?://[^\s/]+\S*$",
        # a secret: a config error never echoes it
        json_schema_extra={"writeOnly": True, "x-rule": "webhook_url"},
        description="where the alert is POSTed (http or https); a Slack incoming webhook's "
        "URL is a secret: it is never printed",
    )
    format: Literal["json", "slack"] = Field(
        default="json",
        description='"json": the alert as a JSON object; "slack": Slack\'s incoming-webhook '
        'body, {"text": ...}',
    )

    @field_validator("url")
    @classmethod
    def _parses(cls, url: str) -> str:
        problem = webhook_url_problem(url)
        if problem:
            raise ValueError(problem)
        return url

    events: list[Event] = Field(
        default_factory=lambda: list(EVENTS),
        min_length=1,
        description="the events this webhook is sent",
    )


class NotifySettings(Section):
    webhooks: list[Webhook] = Field(
        default_factory=list, description="where alerts go (none: alerts are not kept)"
    )
    timeout_s: float = Field(default=5.0, gt=0, le=60, description="one request's timeout")
    retry_base_s: float = Field(
        default=5.0, gt=0, le=3600, description="the first delay after a failed delivery"
    )
    retry_max_s: float = Field(
        default=600.0, gt=0, le=86400, description="the cap of the delay between attempts"
    )
    give_up_after_s: float = Field(
        default=7 * 86400.0,
        gt=0,
        description="an alert not delivered for this long is set aside in "
        ".state/notify/failed/ (kept, no longer retried)",
    )
