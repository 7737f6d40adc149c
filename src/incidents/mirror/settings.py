"""`[mirror]` in incidents.toml: where the mirror lives and how a fleet shares it."""

from __future__ import annotations

from pydantic import Field

from incidents.config_section import Section

# what `[mirror] url` must look like (checked again, with the reason, by `mirror.target`)
URL_PATTERN = r"^postgres(ql)?://\S*$"


class MirrorSettings(Section):
    url: str | None = Field(
        default=None,
        pattern=URL_PATTERN,
        description="a PostgreSQL database shared by the fleet (postgresql://...); unset: the "
        "root's own SQLite file; INCIDENTS_MIRROR_URL sets it too",
    )
    host: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="the name this host's rows carry (default: INCIDENTS_HOST, else the hostname)",
    )
    share_groups: bool = Field(
        default=True,
        description="a capture whose group has an open incident on another host counts its "
        "occurrence there instead of opening a second incident",
    )
    silent_after_s: float = Field(
        default=900.0,
        gt=0,
        description="doctor names a host that has not reported for this long",
    )
    timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=120,
        description="how long a process waits for the PostgreSQL server before it works "
        "without it (degraded)",
    )
