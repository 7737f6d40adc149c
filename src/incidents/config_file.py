"""Finding and reading `incidents.toml`, standard library only; answers are plain data.

The file is --config, else INCIDENTS_CONFIG, else `./incidents.toml`. Capture and the
check replay read it through this module alone, so their start never loads pydantic;
`incidents.config.load_config` reads it here too before validating the whole file.
Every failure is a `ConfigError` naming the file and, where there is one, the key.
"""

from __future__ import annotations

import os

from incidents.errors import ConfigError

TYPE_CHECKING = False  # typing and pathlib stay off the capture path (import cost)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    StrPath = str | os.PathLike[str]  # capture passes a str (no pathlib), others a Path

    # A flat table's keys: name -> (default, lowest, highest); the default's type is the type.
    TableSpec = dict[str, tuple[Any, int | None, int | None]]

CONFIG_NAME = "incidents.toml"


def find_config(cli_config: str | None) -> Path | None:
    """--config > INCIDENTS_CONFIG > ./incidents.toml; an explicit path must exist."""
    found = locate_config(cli_config)
    if found is None:
        return None
    from pathlib import Path

    return Path(found)


def locate_config(cli_config: str | None) -> str | None:
    """`find_config` as a string (the capture path's twin: no pathlib)."""
    explicit = cli_config or os.environ.get("INCIDENTS_CONFIG")
    if explicit:
        path = os.path.expanduser(explicit)
        if not os.path.isfile(path):
            from pathlib import Path

            raise ConfigError(str(Path(path)), "", "config file not found")
        return os.path.realpath(path)
    return os.path.realpath(CONFIG_NAME) if os.path.isfile(CONFIG_NAME) else None


def read_raw(path: StrPath) -> dict[str, Any]:
    """The file's tables, parsed."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror}") from exc
    return parse_raw(path, data)


def parse_raw(path: StrPath, data: bytes) -> dict[str, Any]:
    """`data` (the bytes of the file at `path`) parsed as TOML."""
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:  # TOML is UTF-8
        byte = data[exc.start : exc.start + 1].hex()
        raise ConfigError(
            str(path), "", f"not UTF-8 (byte 0x{byte} at offset {exc.start})"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "", f"not valid TOML: {exc}") from exc


def beside(path: StrPath, value: str) -> str:
    """A path written in the config file, `~` expanded, relative to the file's folder."""
    folder = os.path.dirname(os.fspath(path)) or "."
    return os.path.realpath(os.path.join(folder, os.path.expanduser(value)))


def root_from_raw(path: StrPath, raw: dict[str, Any]) -> str | None:
    """The `root` key, resolved against the config file's folder."""
    value = raw.get("root")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(str(path), "root", "must be a non-empty string (a folder path)")
    return beside(path, value)


def read_table(path: StrPath, raw: dict[str, Any], name: str, spec: TableSpec) -> dict[str, Any]:
    """The flat table `[name]` checked against `spec`, the defaults filling what it leaves
    out. The same keys, types and bounds as the pydantic section built from `spec`."""
    values = {key: default for key, (default, _, _) in spec.items()}
    table = raw.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(str(path), name, "must be a table")
    for key, value in table.items():
        if key not in spec:
            raise ConfigError(str(path), f"{name}.{key}", "unknown key")
        default, low, high = spec[key]
        want = type(default)
        if type(value) is not want:
            raise ConfigError(str(path), f"{name}.{key}", f"must be {want.__name__}, got {value!r}")
        if low is not None and value < low:
            raise ConfigError(str(path), f"{name}.{key}", f"must be >= {low}, got {value!r}")
        if high is not None and value > high:
            raise ConfigError(str(path), f"{name}.{key}", f"must be <= {high}, got {value!r}")
        values[key] = value
    return values


def read_str_list(path: StrPath, raw: dict[str, Any], table: str, key: str) -> list[str]:
    """`[table] key`, a list of non-empty strings (empty when absent). For capture, which
    reads only these keys of a table the pydantic model checks as a whole."""
    section = raw.get(table, {})
    if not isinstance(section, dict):
        raise ConfigError(str(path), table, "must be a table")
    value = section.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(str(path), f"{table}.{key}", "must be a list of non-empty strings")
    return value
