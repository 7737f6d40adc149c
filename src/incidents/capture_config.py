"""What capture and run read of incidents.toml, with the standard library alone: the root
the file names, `[capture]`, and `[verification]`'s `allow` and `workdirs`.

Capture must never lose a failure to a mistake in this file: read with `notes`, each
problem (named by file and key) becomes a note and only the part it spoils falls back to
its default. The commands that act on incidents refuse the same file (config.load_config).
"""

from __future__ import annotations

from incidents.config_file import locate_config, read_raw, read_str_list, read_table, root_from_raw
from incidents.errors import ConfigError

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# `[capture]`: default and bounds of each key. The pydantic `config.CaptureSettings` is
# built from this same table, so capture's lean check and the full model cannot disagree.
CAPTURE_KEYS: dict[str, tuple[Any, int | None, int | None]] = {
    "log_tail_bytes": (65536, 1024, 16 << 20),
    "audit_tail_lines": (200, 1, 100_000),
    "dedupe": (True, None, None),
    "max_message_chars": (2000, 80, 100_000),
    "reproduce": (True, None, None),
    "regression_window_days": (30, 0, 3650),
}
DEFAULTS: dict[str, Any] = {key: spec[0] for key, spec in CAPTURE_KEYS.items()}


class CaptureConfig:
    """What capture reads of incidents.toml: the root it names, the `[capture]` table
    (checked against CAPTURE_KEYS), and `[verification]`'s `allow` and `workdirs`, the parts
    of `bundle_rules` capture applies as the step service will again at pickup. (A plain
    class: `dataclasses` pulls `inspect` onto the capture path.)"""

    __slots__ = ("root", "table", "allow", "workdirs")

    def __init__(
        self, root: str | None, table: dict[str, Any], allow: list[str], workdirs: list[str]
    ) -> None:
        self.root, self.table, self.allow, self.workdirs = root, table, allow, workdirs


def capture_settings(cli_config: str | None) -> tuple[str | None, dict[str, Any]]:
    """(the config's root, the `[capture]` table checked against CAPTURE_KEYS)."""
    cfg = read_settings(cli_config)
    return cfg.root, cfg.table


def read_settings(cli_config: str | None, notes: list[str] | None = None) -> CaptureConfig:
    """incidents.toml as capture reads it. With `notes` (a list to fill: capture and run,
    which must never lose a failure), a problem is a note naming the file and the key and
    the part it spoils falls back to its default; without, it is a ConfigError."""

    def kept(problem: ConfigError) -> None:
        if notes is None:
            raise problem
        notes.append(str(problem))

    try:
        path = locate_config(cli_config)
        raw = {} if path is None else read_raw(path)
    except ConfigError as exc:
        kept(exc)
        return CaptureConfig(None, dict(DEFAULTS), [], [])
    if path is None:
        return CaptureConfig(None, dict(DEFAULTS), [], [])
    from incidents.bundle_rules import workdirs_problem
    from incidents.config_check import check_whole

    try:
        check_whole(path, raw)  # the whole file, as every other command checks it (no pydantic)
    except ConfigError as exc:
        kept(exc)
    table = _capture_table(path, raw, kept)
    workdirs: list[str] = []
    allow: list[str] = []
    root = None
    try:
        workdirs = read_str_list(path, raw, "verification", "workdirs")
        problem = workdirs_problem(workdirs)
        if problem is not None:
            workdirs = []
            raise ConfigError(path, "verification.workdirs", problem)
    except ConfigError as exc:
        kept(exc)
    try:
        allow = read_str_list(path, raw, "verification", "allow")
    except ConfigError as exc:
        kept(exc)
    try:
        root = root_from_raw(path, raw)
    except ConfigError as exc:
        kept(exc)
    return CaptureConfig(root, table, allow, workdirs)


def _capture_table(
    path: str, raw: dict[str, Any], kept: Callable[[ConfigError], None]
) -> dict[str, Any]:
    """`[capture]`, each key that is wrong (a typo, a bad value) left at its default."""
    try:
        return read_table(path, raw, "capture", CAPTURE_KEYS)
    except ConfigError as exc:
        kept(exc)
    given = raw.get("capture")
    table = dict(DEFAULTS)
    for key, value in given.items() if isinstance(given, dict) else ():
        try:
            table[key] = read_table(path, {"capture": {key: value}}, "capture", CAPTURE_KEYS)[key]
        except ConfigError:
            continue  # noted above, or one more wrong key of the same table
    return table
