"""The watcher daemon: see `incidents.watch.daemon` (kept import-light: settings imports it)."""
