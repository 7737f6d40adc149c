"""The dashboard in a real headless Chromium (Debian's, over the DevTools pipe, as the review
page's test drives it): a new incident appears without a reload, a requeue is confirmed
and the bundle is back in the inbox, text from a bundle stays text. The screenshot goes
to tests/artifacts/dashboard.png (gitignored); with INCIDENTS_SCREENSHOTS=1 it replaces
docs/dashboard.png, the README's picture."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from incidents import pause
from incidents.layout import Root
from tests.helpers import REPO, Cli, capture
from tests.review.chromium import Browser
from tests.serve.conftest import escalate
from tests.serve.server import Server

pytestmark = pytest.mark.slow
SCREENSHOT = (
    REPO / "docs" / "dashboard.png"
    if os.environ.get("INCIDENTS_SCREENSHOTS") == "1"
    else REPO / "tests" / "artifacts" / "dashboard.png"
)


def wait_for(check: Callable[[], object], what: str, timeout: float = 15.0) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def present(browser: Browser, selector: str) -> bool:
    return bool(browser.js(f"!!document.querySelector({json.dumps(selector)})"))


def test_the_dashboard_live_and_a_requeue(
    server: Server, browser: Browser, cli: Cli, fast: Path, root: Root
) -> None:
    stuck = escalate(cli, fast)
    kept = escalate(cli, fast, "report.py")
    capture(cli, message="nightly export: connection reset by peer", step="export")
    browser.goto(f"http://{server.host}/#key={server.token}")
    wait_for(lambda: present(browser, f'.card[data-id="{stuck}"]'), "the escalated card")
    wait_for(
        lambda: browser.js("document.getElementById('live').textContent") == "live", "the stream"
    )
    assert browser.js("location.hash") == ""  # the token left the address bar
    browser.js("window.notReloaded = true")

    # a new incident appears without a reload, its text shown as text
    hostile = capture(cli, message='<img src=x onerror="window.pwned=1"> disk full', step="backup")
    wait_for(lambda: present(browser, f'#inbox tr[data-id="{hostile}"]'), "the new incident")
    assert browser.js("window.notReloaded") is True
    assert browser.js("document.querySelectorAll('#inbox img').length") == 0
    assert browser.js("window.pwned === undefined") is True
    row_text = browser.js(f"document.querySelector('#inbox tr[data-id=\"{hostile}\"]').textContent")
    assert '<img src=x onerror="window.pwned=1">' in row_text

    # the escalation's timeline and diff, on demand
    browser.js(f"document.querySelector('details[data-id=\"{stuck}\"]').open = true")
    wait_for(lambda: present(browser, f'details[data-id="{stuck}"] pre'), "the diff")
    shown = browser.js(
        f'Array.from(document.querySelectorAll(\'details[data-id="{stuck}"] .mono, '
        f'details[data-id="{stuck}"] pre, details[data-id="{stuck}"] td\'))'
        ".map(function (e) { return e.textContent; })"
    )
    assert shown[-2:] == ["bad.py", "unchanged: the final file is the original"]  # no fixer ran
    assert "captured" in shown and "S4_QUARANTINE" in shown

    # requeue: the confirmation says what will happen; confirmed, the bundle is back
    browser.js(f"document.querySelector('.card[data-id=\"{stuck}\"] .act-requeue').click()")
    wait_for(lambda: browser.js("!document.getElementById('confirm').hidden"), "the confirmation")
    said = browser.js("document.getElementById('confirm-text').textContent")
    assert "back to the inbox" in said and "budget is reset" in said
    browser.js(
        "document.getElementById('confirm-input').value = 'the syntax error is fixed upstream'"
    )
    browser.js("document.getElementById('confirm-ok').click()")
    wait_for(lambda: (root.inbox / stuck).is_dir(), "the bundle back in the inbox")
    wait_for(lambda: present(browser, f'#inbox tr[data-id="{stuck}"]'), "the requeued row")
    wait_for(lambda: not present(browser, f'.card[data-id="{stuck}"]'), "the card gone")
    assert browser.js("window.notReloaded") is True
    decisions = json.loads((root.inbox / stuck / "decisions.json").read_text())
    assert decisions[-1]["guidance"] == "the syntax error is fixed upstream"
    activity = browser.js("document.getElementById('activity').textContent")
    assert "incident.requeued" in activity

    # pause and resume from the page: the banner follows the flag
    browser.js("document.getElementById('pause-btn').click()")
    wait_for(lambda: browser.js("!document.getElementById('confirm').hidden"), "the pause dialog")
    assert "start no new work" in browser.js("document.getElementById('confirm-text').textContent")
    browser.js("document.getElementById('confirm-input').value = 'provider outage'")
    browser.js("document.getElementById('confirm-ok').click()")
    wait_for(lambda: browser.js("!document.getElementById('banner').hidden"), "the pause banner")
    assert "provider outage" in browser.js("document.getElementById('banner-text').textContent")
    info = pause.current(root)
    assert info is not None and info.reason == "provider outage"
    browser.js("document.getElementById('resume-btn').click()")
    wait_for(lambda: browser.js("!document.getElementById('confirm').hidden"), "the resume dialog")
    browser.js("document.getElementById('confirm-ok').click()")
    wait_for(lambda: browser.js("document.getElementById('banner').hidden"), "the banner gone")
    assert pause.current(root) is None

    # why an incident waits: a transient failure retried after a backoff
    (fast / "fetch.py").write_text("import sys\nsys.exit(1)\n")
    retried = capture(cli, "--verify", "python fetch.py", ws=fast, step="download",
                      message="Network timeout during receipt download: connection timed out")  # fmt: skip
    for _ in range(3):  # plan, baseline check, then the wait
        assert cli("step", retried).code == 0
    cell = f"document.querySelector('#inbox tr[data-id=\"{retried}\"] .pill.wait')"
    wait_for(lambda: browser.js(f"!!{cell}"), "the waiting reason")
    assert browser.js(f"{cell}.textContent").startswith("retry after ")

    # the picture for the README: the other escalation opened, the toast gone
    browser.js(f"document.querySelector('details[data-id=\"{kept}\"]').open = true")
    wait_for(lambda: present(browser, f'details[data-id="{kept}"] pre'), "the other diff")
    browser.js("document.getElementById('toast').hidden = true; window.scrollTo(0, 0)")
    time.sleep(2.2)  # the new rows' highlight fades
    browser.screenshot(SCREENSHOT, full_page=True)
