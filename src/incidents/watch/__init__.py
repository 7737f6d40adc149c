"""The watcher daemon: `daemon.Watcher` over `schedule`, `pool`, `observer` and `intake`.

Kept import-light: settings imports `watch.settings`.
"""
