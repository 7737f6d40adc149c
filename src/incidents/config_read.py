"""What a command that only reads (`status`'s list) needs of incidents.toml, with the
standard library alone: the root, where the mirror is, and the inbox's grace before a bad
bundle is set aside. The whole file is checked as every command checks it
(`incidents.config_check`, against the table generated from the pydantic models), and the
defaults are the models' own, written into that table (`x-read-defaults`)."""

from __future__ import annotations

from incidents.config_check import check_whole, table
from incidents.config_file import locate_config, read_raw, root_from_raw

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ReadSettings:
    """The part of `incidents.config.Config` a read-only command uses, by dotted key."""

    __slots__ = ("root", "values")

    def __init__(self, root: str | None, values: dict[str, Any]) -> None:
        self.root, self.values = root, values

    def get(self, key: str) -> Any:
        return self.values[key]


def read_settings(cli_config: str | None) -> ReadSettings:
    """--config > INCIDENTS_CONFIG > ./incidents.toml; a bad file is a ConfigError naming
    the file and the key, as for every other command."""
    values = dict(table()["x-read-defaults"])
    path = locate_config(cli_config)
    if path is None:
        return ReadSettings(None, values)
    raw = read_raw(path)
    check_whole(path, raw)
    for key in values:
        section, _, name = key.partition(".")
        given = raw.get(section, {})
        if name in given:
            values[key] = given[name]
    return ReadSettings(root_from_raw(path, raw), values)
