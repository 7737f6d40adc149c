"""Roots standing for the hosts of a fleet, sharing one real PostgreSQL mirror; each
host's commands and watchers are real processes with that host's environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from incidents.layout import Root
from incidents.mirror import target
from tests.mirror.test_derived import AIDER, CONFIG
from tests.stand_ins import stand_in


@dataclass(frozen=True)
class Host:
    name: str
    root: Root
    env: dict[str, str]
    cwd: Path


def make_hosts(tmp: Path, url: str, names: tuple[str, ...], config: str = CONFIG) -> list[Host]:
    """One root, one environment and one working folder per host name; one config."""
    (tmp / "incidents.toml").write_text(config)
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    stand_in(bin_dir, "aider", AIDER)
    hosts = []
    for name in names:
        cwd = tmp / name
        cwd.mkdir()
        env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "INCIDENTS_ROOT": str(cwd / "reports"),
            "INCIDENTS_CONFIG": str(tmp / "incidents.toml"),
            target.ENV_URL: url,
            target.ENV_HOST: name,
        }
        hosts.append(Host(name, Root(cwd / "reports"), env, cwd))
    return hosts
