"""`incidents.toml`: found via --config, INCIDENTS_CONFIG or the current directory.

`find_config`/`read_raw` are stdlib only (capture reads the root and its own section with
them); `load_config` validates the whole file into the pydantic `Config` model, reporting
a bad key or value with the file, the dotted key and the reason.
"""

from __future__ import annotations

import os
from pathlib import Path

from incidents.errors import ConfigError

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any

    from incidents.settings import Config

CONFIG_NAME = "incidents.toml"


def find_config(cli_config: str | None) -> Path | None:
    """--config > INCIDENTS_CONFIG > ./incidents.toml; an explicit path must exist."""
    explicit = cli_config or os.environ.get("INCIDENTS_CONFIG")
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(str(path), "", "config file not found")
        return path.resolve()
    local = Path(CONFIG_NAME)
    return local.resolve() if local.is_file() else None


def read_raw(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "", f"not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:  # TOML is UTF-8; tomllib decodes the whole file first
        byte = exc.object[exc.start : exc.start + 1].hex()
        raise ConfigError(
            str(path), "", f"not UTF-8 (byte 0x{byte} at offset {exc.start})"
        ) from exc


def root_from_raw(path: Path, raw: dict[str, Any]) -> str | None:
    """The `root` key, resolved against the config file's folder."""
    value = raw.get("root")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(str(path), "root", "must be a non-empty string (a folder path)")
    return str((path.parent / os.path.expanduser(value)).resolve())


def load_config(cli_config: str | None = None) -> Config:
    """Validate the whole file; defaults when there is none."""
    from pydantic import ValidationError

    from incidents.settings import Config

    path = find_config(cli_config)
    if path is None:
        return Config()
    raw = read_raw(path)
    try:
        cfg = Config.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        reason = first["msg"]
        if first["type"] == "extra_forbidden":
            reason = "unknown key"
        elif "input" in first and not isinstance(first["input"], dict):
            reason = f"{reason} (got {first['input']!r})"
        raise ConfigError(str(path), key, reason) from exc
    cfg.source = str(path)
    cfg.root = root_from_raw(path, raw)
    return cfg
