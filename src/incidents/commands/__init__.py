"""Typer command modules; each exposes `register(app)`."""
