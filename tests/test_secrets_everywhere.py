"""No secret survives into the root: a full run with a secret planted in every input (capture's
message, log, audit lines, context and verification command; a plan supplied with --from; an
attempt document; submit notes; archive, pause and resolve-escalation texts), then every file
under the root, every row of every table of the SQLite mirror, the review page and the status
output are searched for each planted secret."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from incidents.layout import Root
from incidents.watch.log import Log
from tests.bundles import drop
from tests.helpers import BROKEN, FAST, FIXED, FIXTURES, TIERS_OFF, TYPED, Cli, capture, use_config

CONFIG = (
    '[checks]\ntools = ["ruff"]\n[tiers.aider]\nmode = "handoff"\n'
    '[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)

# Every secret is fake, and each one is planted in one input only, so a leak names its door.
AWS_ID = "AKIAQ3XZ7PLM2WNB4KCD"
SECRETS = {
    "message": "Vq8/Ld3kTz0Rm1Xb5Nc7Pw2Ys9Hj4Ga6Fe+Ku0Oi",  # a bare AWS secret access key
    "log_aws": "Rt5Yu7Io9Pa1Sd3Fg5Hj7Kl9Zx1Cv3Bn5Mq7Wx9E",
    "log_azure": (
        "q2Nf7Kd9Lp3Xs5Vb8Mz1Rt4Yw6Hj0Gc2Ue5Ia7Oo9Pk1Qm3Sn5Tv7Wx9Zb1Dc3Fe5Gh7Ij9Kl1Mn3Op5Qr7St9"
        "=="
    ),
    "audit": "ghp_Aud1tT0kenQw8Er7Ty6Ui5Op4As3Df2Gh1Jk0",
    "context": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSj\n",
    "context_value": "Zx8Cv7Bn6Mq5Wr4Et3Yu2Io1Pa0Sd9Fg8Hj7Kl6J",
    "verify": "ctxVerifyPassw0rd4711",
    "plan": "glpat-PlanSupp1iedT0kenXyZ9",
    "attempt_notes": "Nt4Yh6Uj8Ik0Ol2Pz4Xs6Cd8Vf0Bg2Nh4Mj6Ki8L",
    "attempt_actions": "xoxb-357410007212-3059510504317-AttemptAct10ns",
    "submit_notes": "sk-proj-SubmitN0tesSecretKey1234567890",
    "archive": "Qw1Er3Ty5Ui7Op9As1Df3Gh5Jk7Lz9Xc1Vb3Nm5Q",
    "pause": "Pa9Us8Ee7Rr6Ea5So4Nn3Mm2Kk1Jj0Hh9Gg8Ff7D",
    "guidance": "npm_Gu1danceT0kenAbCdEfGhIjKlMnOpQrStUvW",
}


def _plant(tmp_path: Path) -> dict[str, Path]:
    log = tmp_path / "job.log"
    log.write_text(
        "syncing receipts\n"
        f"aws configure: {AWS_ID} {SECRETS['log_aws']}\n"
        f"the storage account key is {SECRETS['log_azure']}\n"
        "error: f.py does not parse\n"
    )
    audit = tmp_path / "audit.jsonl"
    audit.write_text(json.dumps({"event": "push", "with": SECRETS["audit"]}) + "\n")
    context = tmp_path / "context.json"
    context.write_text(
        json.dumps(
            {
                "service_account": {"type": "service_account", "pk": SECRETS["context"]},
                "note": f"secret: {SECRETS['context_value']}",
            }
        )
    )
    plan = json.loads((FIXTURES / "plans" / "valid.json").read_text())
    plan["summary"] = f"rotate the token {SECRETS['plan']} first"
    plan["actions"][0]["target_paths"] = ["f.py"]
    plan["actions"][0]["verification"] = []
    plan["verification_commands"] = []
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    return {"log": log, "audit": audit, "context": context, "plan": tmp_path / "plan.json"}


def _files_text(root: Path) -> dict[str, str]:
    out = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = path.read_bytes().decode("utf-8", "replace")
    return out


def _rows_text(db: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                out.setdefault(table, "")
                out[table] += "\n".join(str(v) for v in row) + "\n"
    return out


def _leaks(where: dict[str, str]) -> list[tuple[str, str]]:
    found = []
    for name, secret in SECRETS.items():
        needles = [line for line in secret.splitlines() if "-----" not in line and line]
        for place, text in where.items():
            if any(n in text or json.dumps(n)[1:-1] in text for n in needles):
                found.append((name, place))
    return found


def test_no_planted_secret_reaches_any_file_row_page_or_output(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, CONFIG)
    ws = tmp_path / "ws"
    ws.mkdir()
    inputs = _plant(tmp_path)
    (ws / "check.py").write_text("")
    outputs: dict[str, str] = {}

    # capture: message, log, audit lines, context, a verification command's arguments
    fixed = capture(
        cli, "--log-file", str(inputs["log"]), "--audit-file", str(inputs["audit"]),
        "--context-json", str(inputs["context"]),
        "--verify", f"python check.py --password={SECRETS['verify']}",
        message=f"upload failed: the secret key is {SECRETS['message']}",
        ws=ws, target="f.py", content=BROKEN,
    )  # fmt: skip
    plan = inputs["plan"].read_text().replace("INCIDENT_ID", fixed)
    inputs["plan"].write_text(plan)
    r = cli("plan", fixed, "--from", str(inputs["plan"]))
    assert r.code == 0, r.err
    r = cli("drive", fixed)
    assert "AWAIT_HANDOFF" in r.out, r.out + r.err
    outputs["drive"] = r.out + r.err
    outputs["next"] = cli("next", "--json").out
    assert cli("claim", fixed, "--agent", "skill").code == 0
    attempt = tmp_path / "attempt.json"
    attempt.write_text(
        json.dumps(
            {
                "incident_id": fixed, "iteration": 1,
                "started_at": "2026-02-17T03:00:00+00:00",
                "finished_at": "2026-02-17T03:05:00+00:00",
                "actions_applied": [f"posted to slack with {SECRETS['attempt_actions']}"],
                "verification_commands": [], "verification_passed": False,
                "result": "continue",
                "notes": f"used the secret {SECRETS['attempt_notes']} to log in",
            }
        )
    )  # fmt: skip
    r = cli("attempt", fixed, "--file", str(attempt), "--agent", "skill")
    assert r.code == 0, r.err
    (ws / "f.py").write_text(FIXED)
    r = cli("submit", fixed, "--notes", f"fixed it; OPENAI key {SECRETS['submit_notes']}")
    assert r.code == 0, r.err
    outputs["submit"] = r.out + r.err
    r = cli("drive", fixed)
    outputs["drive2"] = r.out + r.err
    assert (root.bucket("resolved") / fixed).is_dir(), r.out + r.err

    # a second incident closed by hand, then a human's decision on it
    other = capture(cli, message="g.py broken", ws=ws, target="g.py", content=BROKEN)
    reason = f"gave up: aws secret {SECRETS['archive']}"
    assert cli("archive", other, "--escalated", "--reason", reason).code == 0
    r = cli("resolve-escalation", other, "--guidance", f"rotated {SECRETS['guidance']}")
    assert r.code == 0, r.err
    outputs["resolve"] = r.out + r.err

    r = cli("pause", "--reason", f"leaked secret {SECRETS['pause']}")
    assert r.code == 0, r.err
    outputs["pause"] = r.out + r.err
    for args in (("status",), ("status", "--all", "--json"), ("status", fixed, "--json")):
        r = cli(*args)
        outputs[" ".join(args)] = r.out + r.err
    r = cli("review")
    assert r.code == 0, r.err
    outputs["plan"] = cli("plan", fixed).out
    outputs["resume"] = cli("resume").out

    leaks = _leaks(_files_text(root.path)) + _leaks(_rows_text(root.db_path)) + _leaks(outputs)
    assert leaks == [], "\n".join(f"{name} in {place}" for name, place in leaks)
    # the run itself was real: the planted texts' neighbours are there
    files = _files_text(root.path)
    assert any("[REDACTED]" in t for t in files.values())
    assert any("upload failed" in t for t in files.values())


HAND = {
    "message": "Hb3Nc5Md7Fe9Gf1Hg3Jh5Ki7Lj9Mk1Nl3Om5Pn7Q",
    "log": "ghp_HandDr0ppedL0gT0kenQw8Er7Ty6Ui5Op4As",
    "context": "xoxp-517110748033-133234177999-8321698079996-handdroppedcontext",
}


def test_a_bundle_written_by_hand_is_redacted_before_anything_repeats_it(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bundle dropped into the inbox by another tool never went through capture: its texts
    are redacted wherever the machine repeats them (state, report, mirror, page, status)."""
    use_config(tmp_path, monkeypatch, '[checks]\ntools = ["ruff"]\n' + TIERS_OFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.py").write_text(BROKEN)
    folder = drop(
        root, "hand", ws, python_files=["f.py"],
        message=f"push failed, secret {HAND['message']}",
    )  # fmt: skip
    (folder / "log_tail.txt").write_text(f"git push with {HAND['log']}\n")
    (folder / "context.json").write_text(json.dumps({"slack": f"token {HAND['context']}"}))
    incident_id = folder.name
    outputs = {"drive": cli("drive", incident_id).out}
    assert (root.bucket("escalated") / incident_id).is_dir(), outputs["drive"]
    outputs["status"] = cli("status", "--all", "--json").out
    outputs["detail"] = cli("status", incident_id, "--json").out
    assert cli("review").code == 0
    texts = {**_files_text(root.path), **_rows_text(root.db_path), **outputs}
    # the bundle's own files are the writer's; everything the machine wrote from them is not
    own = ("incident.json", "log_tail.txt", "context.json")
    leaks = [
        (name, place)
        for name, secret in HAND.items()
        for place, text in texts.items()
        if secret in text and not place.endswith(own)
    ]
    assert leaks == [], "\n".join(f"{name} in {place}" for name, place in leaks)


def test_a_secret_that_tool_output_repeats_is_redacted_in_reports_and_state(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mypy prints the literal it rejects: a key hard-coded in a target reaches the finding's
    message. The user's code itself is kept (the copies of the targets), nothing else."""
    use_config(tmp_path, monkeypatch, TYPED + TIERS_OFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    token = "ghp_T00lOutputT0kenQw8Er7Ty6Ui5Op4AsDfGh"
    code = f'from typing import Literal\n\nTOKEN: Literal["a"] = "{token}"\n'
    incident_id = capture(cli, ws=ws, target="keys.py", content=code)
    r = cli("drive", incident_id)
    assert (root.bucket("escalated") / incident_id).is_dir(), r.out + r.err
    texts = {**_files_text(root.path), **_rows_text(root.db_path)}
    assert any("Incompatible types" in t for t in texts.values())  # mypy did report it
    # the code's own copies: to restore and to compare suppressions against
    copies = ("original_scripts/keys.py", "final_scripts/keys.py", "tamper_baseline_step_1.json")
    leaks = [place for place, text in texts.items() if token in text and not place.endswith(copies)]
    assert leaks == []


def test_the_reason_a_bundle_is_set_aside_names_no_secret(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reason.txt quotes the value that broke a rule: a refused verification command may
    carry a key. The reason, the mirror's row and the output are redacted."""
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    key = "sk-proj-Rej3ctedVerifyCommandKey12345678"
    folder = drop(root, "refused", ws, verify=[f"curl -H 'X-Api-Key: {key}' https://api.example"])
    r = cli("drive", folder.name)
    assert r.code != 0
    reason = (root.rejected / folder.name / "reason.txt").read_text()
    assert "curl" in reason and "[REDACTED]" in reason, reason
    outputs = {"drive": r.out + r.err, "status": cli("status", "--all", "--json").out}
    texts = {**_files_text(root.path), **_rows_text(root.db_path), **outputs}
    leaks = [place for place, text in texts.items() if key in text]
    assert leaks == [f"error_rejected/{folder.name}/incident.json"]  # the writer's own file


@pytest.mark.parametrize("as_json", [False, True])
def test_the_watchers_log_lines_are_redacted(as_json: bool) -> None:
    """The watcher logs reasons and messages (of hand-written bundles too) on stderr."""
    stream = io.StringIO()
    Log(as_json=as_json, stream=stream).event(
        "rejected", reason=f"verify 'curl -u ci:{SECRETS['verify']} https://x' refused"
    )
    assert SECRETS["verify"] not in stream.getvalue() and "[REDACTED]" in stream.getvalue()
