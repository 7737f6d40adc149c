"""Opening a reports root for a command that only reads, without typer or the config's
models: the list form of `status` starts with this alone (`incidents.commands.common`
opens it for the commands that act)."""

from __future__ import annotations

import os

from incidents.errors import NotFound
from incidents.layout import Root, resolve_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from incidents.config_read import ReadSettings


def config_warning(problem: Exception) -> None:
    """A read-only command reads on with the defaults where the config is wrong: it is
    said, naming the file and the key (the commands that act refuse the same file)."""
    from incidents import output

    output.err(f"incidents: warning: {problem}; read with the defaults")


def root_of_config(cli_config: str | None) -> str | None:
    """The `root` a config names even when the rest of it is wrong (None: none readable)."""
    from incidents.config_file import locate_config, read_raw, root_from_raw
    from incidents.errors import ConfigError

    try:
        path = locate_config(cli_config)
        return None if path is None else root_from_raw(path, read_raw(path))
    except ConfigError:
        return None


def read_root(root: str | None, config: str | None) -> tuple[Root, ReadSettings]:
    """`open_root` for a command that only lists (`status`): the config checked with the
    standard library (`incidents.config_read`), the mirror bound, the root required to
    exist; its layout is completed (an existing root) and an interrupted close finished
    only when one is pending, so the step service is loaded only then."""
    from incidents.config_check import table
    from incidents.config_read import ReadSettings, read_settings
    from incidents.errors import ConfigError
    from incidents.mirror import target

    try:
        cfg = read_settings(config)
    except ConfigError as exc:
        config_warning(exc)
        cfg = ReadSettings(root_of_config(config), dict(table()["x-read-defaults"]))
    r = resolve_root(root, cfg.root)
    target.bind(
        r.path,
        cfg.get("mirror.url"),
        cfg.get("mirror.host"),
        cfg.get("mirror.timeout_s"),
        cfg.get("watch.leases"),
    )
    require_root(r)
    r.ensure()
    pending = r.state / "pending"
    if pending.is_dir() and any(not n.startswith(".") for n in os.listdir(pending)):
        from incidents.step import close as closing

        closing.complete_pending(r)
    return r, cfg


def require_root(root: Root) -> None:
    """NotFound unless the reports root exists: what a read-only command says, creating
    nothing, where a root that does not exist would otherwise read as one with no incident."""
    if not os.path.lexists(root.path):
        raise NotFound(f"no reports root at {root.path}")
