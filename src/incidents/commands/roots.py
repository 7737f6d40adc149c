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


def read_root(root: str | None, config: str | None) -> tuple[Root, ReadSettings]:
    """`open_root` for a command that only lists (`status`): the config checked with the
    standard library (`incidents.config_read`), the mirror bound, the root required to
    exist; its layout is completed (an existing root) and an interrupted close finished
    only when one is pending, so the step service is loaded only then."""
    from incidents.config_read import read_settings
    from incidents.mirror import target

    cfg = read_settings(config)
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
