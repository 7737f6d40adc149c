"""The canonical check engine: tool profiles as data, pure parsers, a content-hash cache.

Public entry points live in their modules (imported lazily by callers, since pydantic and
the parsers are not free): `engine.run_error_pipeline`, `autofix.apply_mechanical_fixes`,
`settings.ChecksSettings`, `profiles.BUILTIN_PROFILES`.
"""
