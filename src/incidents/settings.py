"""`incidents.settings.Config` is `incidents.config.Config`, for its remaining importers
(service, doctor, watch.daemon, watch.worker, commands.common, commands.check)."""

from incidents.config import Config, PolicySettings

__all__ = ["Config", "PolicySettings"]
