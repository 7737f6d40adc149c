"""Alerts (`[notify]`): escalations, pauses and regressions reach real webhooks on loopback
(tests/notify/receiver.py), in the generic JSON shape and Slack's `{"text": ...}`, once
per group until its state changes, redacted, and nothing is lost while the receiver is
down: the outbox keeps every alert until it is taken, and sends none twice."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents import pause
from incidents.config import load_config
from incidents.errors import ConfigError
from incidents.layout import Root
from incidents.notify.deliver import Notifier, Pass
from tests.helpers import BROKEN, FAST, MESSY, TIERS_OFF, Cli, capture, incidents, use_config
from tests.notify.receiver import Receiver

SECRET = "hunter2hunter2hunter2"  # a password in a message: never in an alert


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


def notify_config(receiver: Receiver, extra: str = "") -> str:
    return (
        FAST + TIERS_OFF + "[notify]\nretry_base_s = 0.1\nretry_max_s = 0.2\ntimeout_s = 5\n"
        f'[[notify.webhooks]]\nurl = "{receiver.url("/hook")}"\n'
        f'[[notify.webhooks]]\nurl = "{receiver.url("/slack")}"\nformat = "slack"\n' + extra
    )


def outbox(root: Root) -> list[str]:
    base = root.state / "notify" / "outbox"
    return sorted(p.name for p in base.iterdir()) if base.is_dir() else []


def escalate_by_hand(cli: Cli, step: str = "deploy", message: str = "deploy failed") -> str:
    incident_id = capture(cli, step=step, message=message)
    assert cli("archive", incident_id, "--escalated", "--reason", "a person must look").code == 0
    return incident_id


def test_three_escalations_of_one_group_alert_once_until_it_is_decided(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    use_config(tmp_path, monkeypatch, notify_config(receiver))
    message = f"deploy failed: password={SECRET}"
    first, second, third = (escalate_by_hand(cli, message=message) for _ in range(3))
    other = escalate_by_hand(cli, step="backup", message="backup failed")  # another group
    assert len(outbox(root)) == 2
    r = cli("notify", "flush")
    assert r.code == 0, r.out + r.err
    hooks, slack = receiver.bodies("/hook"), receiver.bodies("/slack")
    assert sorted(b["incident_id"] for b in hooks) == sorted([first, other])
    assert [set(b) for b in slack] == [{"text"}, {"text"}]
    assert outbox(root) == []
    # the generic body: the failure, the decision and its command, redacted
    [alert] = [b for b in hooks if b["incident_id"] == first]
    assert alert["event"] == "escalation" and alert["id"] == f"escalation-{first}"
    assert alert["suggestion"]["kind"] == "requeue"
    assert f"resolve-escalation {first}" in alert["suggestion"]["command"]
    assert SECRET not in json.dumps(receiver.received) and "[REDACTED]" in alert["headline"]
    assert any(first in b["text"] and "escalated (deploy)" in b["text"] for b in slack)
    # the group's later members are counted into its alert, not alerted
    assert cli("notify", "flush").code == 0 and len(receiver.received) == 4
    # a person requeues them: the group's state changed, its next escalation alerts again
    for incident_id in (first, second, third):
        assert cli("resolve-escalation", incident_id, "--guidance", "retry", "--requeue").code == 0
    assert cli("archive", second, "--escalated", "--reason", "still failing").code == 0
    assert cli("notify", "flush").code == 0
    assert [b["incident_id"] for b in receiver.bodies("/hook")][-1] == second
    assert len(receiver.bodies("/hook")) == 3


def test_the_receiver_down_then_back_loses_nothing_and_sends_nothing_twice(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    use_config(tmp_path, monkeypatch, notify_config(receiver))
    receiver.stop()  # down: nothing listens
    ws = tmp_path / "ws"
    ws.mkdir()
    driven = capture(cli, ws=ws, target="bad.py", content=BROKEN, step="lint")
    assert cli("drive", driven).code == 0  # the step service escalates it: not held up
    by_hand = escalate_by_hand(cli)
    pause.pause(root, f"provider outage, password={SECRET}")
    assert len(outbox(root)) == 3
    r = cli("notify", "flush")
    assert r.code == 1 and "Connection refused" in r.err, r.err
    assert receiver.url() not in r.err  # a webhook's URL may be a secret: never printed
    listed = cli("notify", "list").out
    assert "1 attempt(s)" in listed and len(outbox(root)) == 3
    receiver.start()  # back, on the same port
    # the watcher's loop delivers (a burst run: its last pass before it returns)
    done = incidents("watch", "--until-idle", "--root", str(root.path), timeout=120)
    assert done.returncode == 0, done.stderr
    assert outbox(root) == [], done.stderr
    ids = [b["id"] for b in receiver.bodies("/hook")]
    assert sorted(ids) == sorted(
        [f"escalation-{driven}", f"escalation-{by_hand}", next(i for i in ids if "pause" in i)]
    )
    assert len(receiver.bodies("/slack")) == 3
    assert cli("notify", "flush").code == 0 and len(receiver.received) == 6  # no duplicates
    [paused] = [b for b in receiver.bodies("/hook") if b["event"] == "pause"]
    assert "provider outage" in paused["text"] and SECRET not in json.dumps(receiver.received)
    [syntax] = [b for b in receiver.bodies("/hook") if b.get("incident_id") == driven]
    assert syntax["headline"].startswith("bad.py:1")  # the finding itself, file:line
    # a pause that stands alerts once: pausing again while paused does not
    pause.pause(root, "still out")
    assert outbox(root) == []


def test_a_regression_alerts(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    """A failure back after a verified fix alerts; back after a close by hand (no fix
    verified) it is a recurrence, and no alert."""
    use_config(tmp_path, monkeypatch, notify_config(receiver))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "m.py").write_text(MESSY)
    monkeypatch.chdir(ws)
    args = ("capture", "--step", "export", "--message", "export failed", "--python-file", "m.py")
    first = cli(*args).out.strip()
    assert cli("drive", first).code == 0  # ruff mends m.py at its check: a verified fix
    assert (root.bucket("resolved") / first).is_dir()
    assert outbox(root) == []  # a resolve is no alert
    (ws / "m.py").write_text(MESSY)
    again = cli(*args).out.strip()
    assert again != first
    assert cli("notify", "flush").code == 0
    [alert] = receiver.bodies("/hook")
    assert alert["event"] == "regression" and alert["incident_id"] == again
    assert alert["regression_of"] == first and f"regressed {first}" in alert["text"]
    other = ("capture", "--step", "load", "--message", "load failed: disk full")
    by_hand = cli(*other).out.strip()
    assert cli("archive", by_hand, "--resolved", "--reason", "freed the disk").code == 0
    assert cli(*other).out.strip() != by_hand
    assert cli("notify", "flush").code == 0
    assert len(receiver.bodies("/hook")) == 1  # a recurrence is no regression


def test_an_outbox_that_cannot_be_written_breaks_no_close(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    use_config(tmp_path, monkeypatch, notify_config(receiver))
    root.ensure()
    (root.state / "notify").write_text("not a folder")
    incident_id = capture(cli, step="deploy", message="deploy failed")
    r = cli("archive", incident_id, "--escalated", "--reason", "a person must look")
    assert r.code == 0 and "escalation alert not queued" in r.err
    assert (root.bucket("escalated") / incident_id).is_dir()
    (root.state / "notify").unlink()  # the control: writable again, the alert is queued
    assert escalate_by_hand(cli, step="backup") and len(outbox(root)) == 1


def test_a_hanging_receiver_never_holds_up_the_loop(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    use_config(tmp_path, monkeypatch, notify_config(receiver))
    escalate_by_hand(cli)
    import threading

    receiver.hold = threading.Event()
    passes: list[Pass] = []
    notifier = Notifier(root, load_config().notify, passes.append)
    notifier.pump()  # returns while the receiver still holds the request
    assert receiver.holding.wait(10) and passes == [] and notifier.thread is not None
    assert notifier.thread.is_alive()
    receiver.hold.set()
    notifier.finish(10)
    assert passes and passes[0].delivered == 1 and outbox(root) == []


def test_no_webhook_keeps_no_alert(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, FAST)
    escalate_by_hand(cli)
    assert len(outbox(root)) == 1
    r = cli("notify", "flush", "--json")
    assert r.code == 0 and r.json()["dropped"] == 1 and outbox(root) == []


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[[notify.webhooks]]\nurl = "ftp://example.com/x"\n', "notify.webhooks.0.url"),
        ('[[notify.webhooks]]\nurl = "http://x/h"\nformat = "teams"\n', "notify.webhooks.0.format"),
        (
            '[[notify.webhooks]]\nurl = "http://x/h"\nevents = ["lunch"]\n',
            "notify.webhooks.0.events.0",
        ),
        ("[notify]\nretry_base = 5\n", "notify.retry_base"),
    ],
)
def test_a_bad_notify_table_is_refused_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, key: str
) -> None:
    path = use_config(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert caught.value.key == key and str(path) in str(caught.value)


def test_texts_from_a_bundle_that_never_met_capture_are_redacted(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    from incidents import notify
    from tests.review.archive import write_handoff_bundle

    use_config(tmp_path, monkeypatch, notify_config(receiver))
    incident_id = "incident_20991231_000000_deploy_hand"
    folder = write_handoff_bundle(root, incident_id, at="2099-12-31T00:00:00+00:00")
    doc = json.loads((folder / "incident.json").read_text())
    doc["message"] = f"deploy failed: password={SECRET}"
    (folder / "incident.json").write_text(json.dumps(doc))
    (folder / "log_tail.txt").write_text(f"connecting\nERROR: login refused, api_key={SECRET}\n")
    shutil.rmtree(folder / "error_reports")  # no check ran: the log's error is the headline
    notify.escalated(root, doc, doc["error_signature"])
    assert cli("notify", "flush").code == 0
    [alert] = receiver.bodies("/hook")
    assert alert["headline"].startswith("ERROR: login refused, api_key=")
    assert SECRET not in json.dumps(receiver.received) and "[REDACTED]" in alert["text"]


def test_a_retry_sends_only_to_the_webhooks_that_did_not_take_it(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    other = Receiver()  # down until later
    config = notify_config(receiver, f'[[notify.webhooks]]\nurl = "{other.url("/other")}"\n')
    use_config(tmp_path, monkeypatch, config)
    escalate_by_hand(cli)
    assert cli("notify", "flush").code == 1  # the third webhook is down
    assert len(receiver.received) == 2 and len(outbox(root)) == 1
    other.start()
    try:
        assert cli("notify", "flush").code == 0 and outbox(root) == []
        assert len(receiver.received) == 2 and len(other.bodies("/other")) == 1
    finally:
        other.stop()


def test_one_deliverer_at_a_time_and_an_old_alert_is_set_aside(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    from incidents.locks import flocked

    config = notify_config(receiver).replace("[notify]\n", "[notify]\ngive_up_after_s = 0.001\n")
    use_config(tmp_path, monkeypatch, config)
    escalate_by_hand(cli)
    with flocked(root.state / "notify" / "deliver.lock"):  # a watcher's pass is running
        r = cli("notify", "flush", "--json")
        assert r.json()["busy"] is True and receiver.received == [] and len(outbox(root)) == 1
    receiver.stop()
    r = cli("notify", "flush", "--json")
    assert r.json()["set_aside"] == 1 and outbox(root) == []
    assert len(list((root.state / "notify" / "failed").iterdir())) == 1  # kept, not lost


def test_a_redirect_is_not_a_delivery(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    elsewhere = Receiver().start()  # another host, that would answer a GET with 200
    try:
        use_config(tmp_path, monkeypatch, notify_config(receiver))
        receiver.redirect = elsewhere.url("/moved/SECRETPATH")
        escalate_by_hand(cli)
        r = cli("notify", "flush")
        assert r.code == 1 and "HTTP 302" in r.err and "SECRETPATH" not in r.err, r.err
        assert elsewhere.gets == [] and elsewhere.received == [] and len(outbox(root)) == 1
        receiver.redirect = None  # the control: the same alert, delivered where configured
        assert cli("notify", "flush").code == 0 and outbox(root) == []
        assert len(receiver.bodies("/hook")) == 1 and elsewhere.gets == []
    finally:
        elsewhere.stop()


def test_a_webhook_url_with_credentials_delivers_with_them_and_never_prints_them(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    import base64

    url = receiver.url("/hook").replace("//", f"//alice:{SECRET}@")
    use_config(tmp_path, monkeypatch, FAST + f'[[notify.webhooks]]\nurl = "{url}"\n')
    escalate_by_hand(cli)
    receiver.status = 503  # refused once: the error and the listing name no password
    r = cli("notify", "flush")
    listed = cli("notify", "list")
    assert r.code == 1 and "HTTP 503" in r.err and "127.0.0.1" in r.err, r.err
    assert SECRET not in r.out + r.err + listed.out + listed.err
    receiver.status = 200
    r = cli("notify", "flush")
    assert r.code == 0 and SECRET not in r.out + r.err and outbox(root) == []
    basic = base64.b64encode(f"alice:{SECRET}".encode()).decode()
    assert receiver.auth[-1] == f"Basic {basic}" and len(receiver.bodies("/hook")) == 1


def test_a_refused_webhook_url_is_not_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "Tq8vZ3kLmN0pRsT2uVwXyZ4a"  # a webhook's token in its path: no redaction pattern
    text = f'[[notify.webhooks]]\nurl = "htps://hooks.example.com/api/{token}"\n'
    use_config(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert caught.value.key == "notify.webhooks.0.url" and "must match" in str(caught.value)
    assert token not in str(caught.value)
    # the control: another key's refused value is still shown
    use_config(tmp_path, monkeypatch, '[[notify.webhooks]]\nurl = "http://x/h"\nformat = "teams"\n')
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert "'teams'" in str(caught.value)


def test_a_receiver_that_answers_no_http_is_a_failed_attempt_not_a_crash(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    broken = Receiver().start()
    broken.garbage = True
    try:
        config = notify_config(receiver, f'[[notify.webhooks]]\nurl = "{broken.url("/b")}"\n')
        use_config(tmp_path, monkeypatch, config)
        escalate_by_hand(cli)
        r = cli("notify", "flush")
        assert r.code == 1 and "webhook 3 (127.0.0.1)" in r.err, r.out + r.err
        assert len(receiver.received) == 2 and len(outbox(root)) == 1
        assert "1 attempt(s)" in cli("notify", "list").out  # its backoff is recorded
        # again: the two webhooks that took it are not sent it twice
        assert cli("notify", "flush").code == 1 and len(receiver.received) == 2
        broken.garbage = False  # the control: the third one answers, the alert is done
        assert cli("notify", "flush").code == 0 and outbox(root) == []
        assert len(receiver.received) == 2 and len(broken.bodies("/b")) == 1
    finally:
        broken.stop()


def test_an_outbox_file_of_the_wrong_shape_is_set_aside_and_blocks_no_other(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    use_config(tmp_path, monkeypatch, notify_config(receiver))
    incident_id = escalate_by_hand(cli)
    [name] = outbox(root)
    good = json.loads((root.state / "notify" / "outbox" / name).read_text())
    bad = {**good, "id": "escalation-edited", "at": "yesterday", "next_at": [0]}
    (root.state / "notify" / "outbox" / "escalation-edited.json").write_text(json.dumps(bad))
    r = cli("notify", "flush")
    assert r.code == 0, r.out + r.err
    assert [b["incident_id"] for b in receiver.bodies("/hook")] == [incident_id]
    assert outbox(root) == []
    kept = root.state / "notify" / "failed" / "escalation-edited.json"
    assert json.loads(kept.read_text()) == bad  # set aside whole, for a person


def test_a_failure_text_reaches_slack_as_text_not_as_mentions_or_links(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    use_config(tmp_path, monkeypatch, notify_config(receiver))
    message = "deploy failed <!channel> see <https://evil.example/login|the dashboard> & retry"
    escalate_by_hand(cli, message=message)
    assert cli("notify", "flush").code == 0
    [slack] = receiver.bodies("/slack")
    assert "<!channel>" not in slack["text"] and "<https://" not in slack["text"]
    assert "&lt;!channel&gt; see &lt;https://evil.example/login|the dashboard&gt; &amp; retry" in (
        slack["text"]
    )
    [generic] = receiver.bodies("/hook")  # the control: the JSON body keeps the text as it is
    assert message in generic["text"]


def test_a_close_killed_just_after_its_move_into_escalated_still_alerts(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    import subprocess
    import sys

    use_config(tmp_path, monkeypatch, notify_config(receiver))
    incident_id = capture(cli, step="deploy", message="deploy failed")
    driver = Path(__file__).with_name("kill_after_move.py")
    args = ("archive", incident_id, "--escalated", "--reason", "a person must look")
    killed = subprocess.run(
        [sys.executable, str(driver), *args, "--root", str(root.path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr  # killed, after the move
    assert (root.bucket("escalated") / incident_id).is_dir()
    assert cli("notify", "flush").code == 0  # its pending close is finished first
    assert [b["incident_id"] for b in receiver.bodies("/hook")] == [incident_id]


def test_a_receiver_that_trickles_its_answer_is_cut_off_at_the_timeout(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    from tests.notify.receiver import Trickler

    slow = Trickler()
    try:
        config = notify_config(receiver, f'[[notify.webhooks]]\nurl = "{slow.url()}"\n')
        use_config(tmp_path, monkeypatch, config.replace("timeout_s = 5", "timeout_s = 1"))
        escalate_by_hand(cli)
        # each byte comes well within the timeout: only a bound on the whole answer ends it
        done = incidents("notify", "flush", "--root", str(root.path), timeout=60)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "webhook 3 (127.0.0.1): no whole answer within 1 s" in done.stderr
        assert len(receiver.received) == 2 and len(outbox(root)) == 1  # kept for a retry
    finally:
        slow.stop()


def test_a_receiver_that_answers_late_gets_longer_not_a_duplicate_per_retry(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    config = FAST + f'[notify]\ntimeout_s = 0.5\n[[notify.webhooks]]\nurl = "{receiver.url()}"\n'
    use_config(tmp_path, monkeypatch, config)
    escalate_by_hand(cli)
    receiver.delay_s = 1.5  # it takes each alert, then answers after the timeout
    r = cli("notify", "flush")
    assert r.code == 1 and "no whole answer within 0.5 s" in r.err, r.err
    tries = 1
    while tries < 6 and cli("notify", "flush").code == 1:  # 1 s, 2 s (enough), 4 s...
        tries += 1
    assert outbox(root) == [], cli("notify", "list").out  # taken: no retry for ever
    assert len(receiver.bodies()) == tries + 1  # each late answer's alert was taken too
    # the control: a receiver that answers at once is sent the next alert once
    receiver.delay_s = 0
    escalate_by_hand(cli, step="backup")
    assert cli("notify", "flush").code == 0 and len(receiver.bodies()) == tries + 2


def test_a_webhook_url_ending_in_a_newline_is_refused_without_echoing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "Tq8vZ3kLmN0pRsT2uVwXyZ4a"
    use_config(tmp_path, monkeypatch, f'[[notify.webhooks]]\nurl = "http://h/{token}\\n"\n')
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert caught.value.key == "notify.webhooks.0.url" and token not in str(caught.value)
    use_config(tmp_path, monkeypatch, f'[[notify.webhooks]]\nurl = "http://h/{token}"\n')
    assert load_config().notify.webhooks[0].url.endswith(token)  # the control


@pytest.mark.parametrize("url", ["http://[::1/hook/TOKEN", "http://hooks.example:abc/TOKEN"])
def test_a_webhook_url_that_does_not_parse_is_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    """Its pattern holds, but no request could be made of it: every delivery pass
    failed on it (a bad IPv6 host raised out of the pass)."""
    use_config(tmp_path, monkeypatch, f'[[notify.webhooks]]\nurl = "{url}"\n')
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert caught.value.key == "notify.webhooks.0.url" and "TOKEN" not in str(caught.value)
    good = url.replace("[::1", "[::1]").replace(":abc", ":8080")  # the control
    use_config(tmp_path, monkeypatch, f'[[notify.webhooks]]\nurl = "{good}"\n')
    assert load_config().notify.webhooks[0].url == good
