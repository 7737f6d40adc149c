"""`Section`: the base of every table model of incidents.toml.

Each feature declares its own table (`checks.settings`, `fixers.settings`,
`watch.settings`, `verify.VerifySettings`) on this base, and `incidents.config.Config`
puts them together; a key the model does not have is an error.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A table of incidents.toml: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid")
