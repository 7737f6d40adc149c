"""`capture` and `run` are dispatched before typer loads (see incidents.cli); these entries
only make them appear in `incidents --help`."""

from __future__ import annotations

import typer

_PASS = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


def register(app: typer.Typer) -> None:
    @app.command("capture", context_settings=_PASS)
    def capture(ctx: typer.Context) -> int:
        """Capture a failure as an incident bundle; prints its id (see `capture --help`)."""
        from incidents import capture as cap

        return cap.main(["capture", *ctx.args])

    @app.command("run", context_settings=_PASS)
    def run(ctx: typer.Context) -> int:
        """Run a command; when it fails, capture an incident (see `run --help`)."""
        from incidents import capture as cap

        return cap.main(["run", *ctx.args])
