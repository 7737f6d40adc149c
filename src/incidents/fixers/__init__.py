"""AI fixer tiers (seed 001 §3.5–3.10): aider -> codex -> claude.

Each tier is an adapter over one configured command (`[tiers.<name>]` in incidents.toml,
see `incidents.fixers.settings`): an argv template with `{prompt_file}`, `{prompt}`,
`{files}` and `{workdir}` placeholders, optional prompt on stdin, a timeout, a mode
(`on`, `off`, `auto` = on when the program is on PATH, `handoff` = an outside agent does
the work through the CLI; the adapter is not run) and `max_attempts` per tier.

Default commands, the CLIs' documented non-interactive forms:

- aider: `aider --message-file {prompt_file} --yes-always --no-auto-commits
  --no-dirty-commits --no-stream --no-pretty {files}`. aider.chat/docs/scripting.html:
  `--message-file` sends one message from a file, applies the edits and exits;
  `--yes-always` answers confirmations; `--no-auto-commits` / `--no-dirty-commits` keep
  git alone (we judge the working tree, the caller decides about commits). Its
  `.aider*` history/cache files are tier scratch, not violations.
- codex: `codex exec --sandbox workspace-write --skip-git-repo-check --cd {workdir} -`,
  prompt on stdin. developers.openai.com/codex/noninteractive: `codex exec` is the
  non-interactive mode, read-only by default; `--sandbox workspace-write` allows edits
  (`--full-auto` is kept only as a deprecated alias); a trailing `-` reads the prompt
  from stdin (avoids ARG_MAX with long prompts); `--skip-git-repo-check` allows a workdir
  that is not a git repository.
- claude: `claude -p --permission-mode acceptEdits --output-format text`, prompt on
  stdin. docs.claude.com/en/docs/claude-code/headless (and the CLI reference): `-p` /
  `--print` runs non-interactively and reads the prompt from stdin when none is given;
  `--permission-mode acceptEdits` auto-accepts file edits while other tools (Bash) that
  would need approval are denied in print mode.

Environment: `proc.minimal_env()` (PATH, HOME, locale, TMPDIR, ...) plus each tier's
`env` pass-through list: the API keys and config homes its CLI needs
(`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `AIDER_*`, `CODEX_HOME`, ...). HOME stays so
the CLIs find their logins. Nothing else from our environment reaches a fixer.

Untrusted output: prompts fence every finding, log and plan text as data; after a run
only changes to the target files are accepted, everything else is reverted.

Containment (`fixers.sandbox`, `fixers.guard`, `fixers.rootwatch`; `[tiers] sandbox`): each program runs under
bubblewrap with the filesystem read-only except its workdir and its tier's `writable`
paths, else with detection. The default `writable` lists are where each CLI keeps state it
must write to work at all (logins refreshed, sessions, caches), and nothing wider (HOME
stays read-only, so a fixer cannot plant a shell rc file or a git hook elsewhere):

- aider: `~/.aider` (its caches, analytics id and OAuth keys; the chat history files go to
  the workdir, and are `scratch` there);
- codex: `$CODEX_HOME`, else `~/.codex` (auth.json refresh, sessions, logs);
- claude: `$CLAUDE_CONFIG_DIR`, else `~/.claude` and `~/.claude.json` (settings, sessions,
  the OAuth token refresh). A CLI that saves a file by renaming a temporary one beside it
  in HOME needs HOME itself; add it to `writable` only if it fails otherwise.

An entry naming an unset variable is left out; a path that does not exist is skipped.
"""

import importlib
from typing import Any

# Names are imported on first use (PEP 562): `incidents.config` needs only the tier
# settings, and importing the prompt and runner modules (and every document model with
# them) would make every command, `incidents check` among them, start ~150 ms slower.
_HOMES = {
    "RetryContext": "prompt",
    "build_prompt": "prompt",
    "FixerOutcome": "runner",
    "render_argv": "runner",
    "run_fixer": "runner",
    "TIER_ORDER": "settings",
    "TierSettings": "settings",
    "TiersSettings": "settings",
    "resolve_enabled": "settings",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'incidents.fixers' has no attribute {name!r}")
    return getattr(importlib.import_module(f"incidents.fixers.{home}"), name)
