"""`Section`: the base of every table model of incidents.toml.

Each feature declares its own table (`checks.settings`, `fixers.settings`,
`watch.settings`, `verify.VerifySettings`) on this base, and `incidents.config.Config`
puts them together; a key the model does not have is an error.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A table of incidents.toml: unknown keys are an error, values are taken as TOML gives
    them (strict: no "5" for 5, no 5.0 for an integer; an integer is a number) and numbers
    are finite. `incidents.config_check` applies the same table without pydantic."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
