"""`incidents --help` without loading typer or a single command module: `incidents.cli`
prints `cli_help.txt`, which this module generates from the typer app
(`python -m incidents.cli_help`; a test fails when it is stale)."""

from __future__ import annotations

import os

HELP_FILE = os.path.join(os.path.dirname(__file__), "cli_help.txt")  # cli.HELP_FILE
HELP_LINE = "  --help  Show this message and exit.\n"
OPTIONS = "  --version  Show the version and exit.\n  --help     Show this message and exit.\n"


def stored() -> str:
    with open(HELP_FILE, encoding="utf-8") as fh:
        return fh.read()


def render() -> str:
    """The full app's help at 80 columns (what a terminal of 80 or more shows), with the
    `--version` option `incidents.cli` answers before typer."""
    import contextlib
    import io

    from incidents.cli import build_app

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
            build_app()(["--help"], prog_name="incidents", standalone_mode=False)
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return buf.getvalue().replace(HELP_LINE, OPTIONS, 1)


if __name__ == "__main__":
    with open(HELP_FILE, "w", encoding="utf-8") as out:
        out.write(render())
    print(f"wrote {HELP_FILE}")
