"""What each MCP tool does, as plain functions over one `Service` (no `mcp` import here).

Every tool is a command's own function called with the arguments the agent gave:
`lint_*` is `incidents check --json` (`commands.check.run_check`), `list_incidents` and
`get_incident` are `status --json` (`commands.status`), `next_incident`, `claim`,
`submit` and `submit_attempt` are the hand-off (`incidents.handoff`), and `run_checks`
is the step service's own check of an incident (`step.actions.Actions.run_checks`),
run without a tick: nothing is committed, no state changes. A user mistake raises the
project's `IncidentsError`, whose one-line message the server returns as a tool error.

Paths given to the lint tools are confined to the server's workdir as a bundle's
targets are to its workdir (`bundle_rules.resolve_target`: symlinks followed, `..`
refused): the server reads nothing outside the folder it was started for. A file found
by walking a folder that leads outside is skipped and listed (`skipped`); one named
outright is refused.

A fixer's server (`Service(..., fixer=ID)`, `incidents mcp --fixer ID`) answers
`run_checks` and `get_incident` for that incident only.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any, Literal

from incidents import leases
from incidents.config import Config
from incidents.errors import AlreadyArchived, InvalidDocument, UsageError
from incidents.layout import Root
from incidents.step.actions import Actions, redacted

Language = Literal["python", "powershell"]
_OTHER_TOOL = {"python": "lint_ps_scripts", "powershell": "lint_python_files"}
_SHOWN = {"python": "Python", "powershell": "PowerShell"}


class Service:
    """The tools of one server: its reports root and config (as `--root`/`--config` give
    them, resolved per call like a command's) and the workdir lint paths are confined to;
    a report names files relative to it, as `incidents check --json` run there does."""

    def __init__(
        self, root: str | None, config: str | None, workdir: str, fixer: str | None = None
    ) -> None:
        self.root_arg, self.config_arg = root, config
        self.workdir = os.path.realpath(workdir)
        self.fixer = fixer  # a fixer's server: this incident's read-only tools only

    def _mine(self, incident_id: str) -> None:
        """A fixer's server answers for its own incident only."""
        if self.fixer is not None and incident_id != self.fixer:
            raise UsageError(f"{incident_id}: this server is for incident {self.fixer} only")

    # -- the canonical checks ---------------------------------------------------------

    def lint(self, paths: list[str], language: Language) -> dict[str, Any]:
        """`incidents check --json` on `paths` (files or folders under the workdir), only
        the files of `language`: the normalized report and its `exit_code`."""
        from incidents.checks.inputs import expand_targets
        from incidents.commands.check import run_check
        from incidents.config import load_config

        if not paths:
            raise UsageError("paths: give at least one file or folder")
        inside = [self.confine(p) for p in paths]
        chosen: list[str] = []
        skipped: list[dict[str, str]] = []
        for given, rel in zip(paths, inside, strict=True):
            try:
                python, powershell = expand_targets([self._abs(rel)])
            except UsageError:
                raise UsageError(f"{given}: not a Python or PowerShell file") from None
            mine, theirs = (python, powershell) if language == "python" else (powershell, python)
            if theirs and not mine and rel != "." and not os.path.isdir(self._abs(rel)):
                raise UsageError(
                    f"{given}: not a {_SHOWN[language]} file (use {_OTHER_TOOL[language]})"
                )
            # a folder's files are confined too: a symlink found in it that leads out is
            # skipped and reported (one named outright is refused, by `confine` above)
            for path in mine:
                found = os.path.relpath(path, self.workdir)
                try:
                    chosen.append(self.confine(found))
                except UsageError as exc:
                    skipped.append({"path": found, "reason": str(exc).removeprefix(f"{found}: ")})
        if not chosen:
            left = f" ({len(skipped)} outside the workdir skipped)" if skipped else ""
            raise UsageError(f"{', '.join(paths)}: no {_SHOWN[language]} file there{left}")
        python, powershell = (chosen, []) if language == "python" else ([], chosen)
        cfg = load_config(self.config_arg)
        enabled = [p.name for p in _profiles(cfg) if p.language == language]
        if not enabled:  # no check would run: never a report of zero issues
            raise UsageError(
                f"no {_SHOWN[language]} check is enabled ([checks] tools: "
                f"{', '.join(cfg.checks.tools or [])})"
            )
        doc, code = run_check(python, powershell, cfg, tools=None, strict=False, cwd=self.workdir)
        return {**doc, "exit_code": code, "skipped": skipped}

    def _abs(self, rel: str) -> str:
        return os.path.join(self.workdir, rel)

    def confine(self, path: str) -> str:
        """`path` relative to the workdir, or UsageError when it leads outside it."""
        from incidents.bundle_rules import resolve_target

        if not isinstance(path, str) or not path or "\x00" in path:
            raise UsageError(f"{path!r}: an empty path or a NUL byte")
        full = os.path.realpath(os.path.join(self.workdir, path))
        if full == self.workdir:
            return "."
        rel, why = resolve_target(path, self.workdir)
        if rel is None:
            raise UsageError(f"{path}: {why}")
        if not os.path.lexists(self._abs(rel)):
            raise UsageError(f"{path}: no such file or folder")
        # named as given (a link inside keeps its name, as in `incidents check`) when that
        # name leads to the same file; else by the file it leads to
        given = os.path.normpath(os.path.relpath(os.path.join(self.workdir, path), self.workdir))
        same = os.path.realpath(self._abs(given)) == full
        return given if same and not given.startswith("..") else rel

    def run_checks(self, incident_id: str) -> dict[str, Any]:
        """The canonical check of an open incident as its next recheck runs it (its
        targets, the tests its failure names, its verification commands), on the files as
        they are now, without a tick: the report is returned, nothing is written."""
        from incidents.config import load_config
        from incidents.layout import resolve_root, validate_id
        from incidents.step import documents

        self._mine(incident_id)
        cfg = load_config(self.config_arg)
        root = resolve_root(self.root_arg, cfg.root)
        bucket, folder = root.locate(validate_id(incident_id))
        if bucket != "inbox":
            raise AlreadyArchived(f"incident {incident_id} is closed ({bucket}); nothing to check")
        incident = documents.read_incident(folder)
        # the committed context is believed only under the root's seal key; a server run
        # by the claude tier inside its sandbox cannot read the key (the root's .state is
        # hidden from fixers), and checks what the incident itself names instead
        sealed = os.access(root.seal_key, os.R_OK)
        ctx = (documents.load_context(root, folder) if sealed else None) or (
            documents.new_context(incident, cfg, 0)
        )
        problems = documents.bundle_problems(root, cfg, incident, ctx)
        if problems:
            raise InvalidDocument(str(folder), "; ".join(problems))
        checker = _ReadOnlyCheck.of(root, cfg, incident_id)
        report = checker.run_checks(incident, ctx, "mcp", baseline=False)
        return redacted(report).model_dump(mode="json")

    # -- the mirror and the hand-off ----------------------------------------------------

    def _session(self, incident_id: str | None = None) -> Any:
        from incidents.commands.common import open_root

        return open_root(self.root_arg, self.config_arg, incident_id)

    def list_incidents(
        self, status: str | None, step: str | None, since: str | None, include_closed: bool
    ) -> dict[str, Any]:
        from incidents.commands import status as status_cmd

        since_iso = status_cmd.parse_since(since, datetime.now(UTC)) if since else None
        status_cmd.check_status(status)
        return status_cmd.list_json(self._session(), include_closed, status, step, since_iso)

    def get_incident(self, incident_id: str) -> dict[str, Any]:
        from incidents.commands.status import one_json
        from incidents.layout import validate_id

        validate_id(incident_id)
        self._mine(incident_id)
        if self.fixer is None:
            return one_json(self._session(incident_id).root, incident_id)
        # a fixer's server runs in its sandbox, where the root is read-only: only read it
        from incidents.config import load_config
        from incidents.layout import resolve_root

        return one_json(resolve_root(self.root_arg, load_config(self.config_arg).root), incident_id)

    def next_incident(self) -> dict[str, Any]:
        from incidents import handoff

        session = self._session()
        why: dict[str, str] = {}
        item = handoff.next_incident(session.root, cfg=session.config, why=why)
        return handoff.no_work(why) if item is None else item.to_json()

    def claim(self, incident_id: str, agent: str, lease: str) -> dict[str, Any]:
        from incidents import handoff

        ttl = handoff.parse_ttl(lease)
        return handoff.claim(self._session(incident_id).root, incident_id, agent, ttl).to_json()

    def submit(self, incident_id: str, notes: str, agent: str | None) -> dict[str, Any]:
        from incidents import handoff

        root = self._session(incident_id).root
        attempt = handoff.submit(root, incident_id, notes, agent=agent)
        return attempt.model_dump(mode="json")

    def supply_plan(self, incident_id: str, plan: dict[str, Any]) -> dict[str, Any]:
        """`incidents plan ID --from FILE` with the document itself: validated, held to
        capture's rules (`commands.plan.supply`), then installed; the old plan stays when
        it is refused."""
        from incidents import planner
        from incidents.commands.plan import supply
        from incidents.layout import validate_id
        from incidents.redact import redact_json

        validate_id(incident_id)
        self._mine(incident_id)
        if not isinstance(plan, dict):
            raise UsageError("plan: give the plan document as a JSON object")
        session = self._session(incident_id)
        valid = planner.plan_from_doc(redact_json(plan), "plan", incident_id)
        path, status = supply(session.root, session.config, incident_id, valid, "plan")
        return {"plan": str(path.relative_to(session.root.path)), "status": status}

    def submit_attempt(
        self, incident_id: str, attempt: dict[str, Any], agent: str | None
    ) -> dict[str, Any]:
        from incidents import handoff

        if not isinstance(attempt, dict):
            raise UsageError("attempt: give the attempt document as a JSON object")
        root = self._session(incident_id).root
        target = handoff.record_attempt_doc(root, incident_id, attempt, "attempt", agent=agent)
        return {"recorded": str(target.relative_to(root.path))}


def _profiles(cfg: Config) -> list[Any]:
    """The tool profiles `incidents check` runs under this config (checks.engine's choice)."""
    from incidents.checks.profiles import resolve_profiles

    settings = cfg.checks
    only = settings.tools
    return list(
        resolve_profiles(
            dict(settings.profiles), hard_ruff_prefixes=settings.hard_ruff_prefixes, only=only
        )
    )


class _ReadOnlyCheck(Actions):
    """The step service's check without a tick: `check_started` (which sets the incident
    `running` and syncs the mirror) does nothing, and nothing is persisted."""

    @classmethod
    def of(cls, root: Root, cfg: Config, incident_id: str) -> _ReadOnlyCheck:
        nobody = leases.Lease(incident_id, "mcp-read-only", 0, 0.0, os.getpid(), "")
        return cls(root, cfg, incident_id, nobody, lambda: datetime.now(UTC))

    def check_started(self) -> None:
        return None
