"""The review page in a real browser: headless Debian Chromium over the DevTools pipe.

The session fixture installs Debian's `chromium` when it is missing (apt-get, as root) and
skips with the reason only where that is impossible. Screenshots go to the test's tmp_path
and to tests/artifacts/ (gitignored).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import Cli
from tests.review.archive import build_real, clone_escalated, write_handoff_bundle
from tests.review.chromium import Browser

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
RENDER_BUDGET_MS = 2000


def save(browser: Browser, tmp_path: Path, name: str) -> Path:
    shot = browser.screenshot(tmp_path / name)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / name).write_bytes(shot.read_bytes())
    return shot


VISIBLE = """(function (sel) {
  return Array.prototype.filter.call(document.querySelectorAll(sel), function (e) {
    var r = e.getBoundingClientRect(), s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none';
  }).map(function (e) { return e.id || e.tagName; });
})"""


def show(browser: Browser, url: str, expect_hash: str) -> None:
    """Navigate (a hash change is handled by the page's `hashchange`, asynchronously)."""
    browser.goto(url)
    deadline = time.monotonic() + 5
    while browser.js("location.hash") != expect_hash:
        assert time.monotonic() < deadline, browser.js("location.hash")
        time.sleep(0.02)


def visible(browser: Browser, selector: str) -> list[str]:
    found: list[str] = browser.js(f"{VISIBLE}({selector!r})")
    return found


def test_cards_filters_and_chart_in_chromium(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Browser
) -> None:
    ids = build_real(cli, tmp_path, monkeypatch)
    hand = "incident_20991231_000000_deploy_hand"
    write_handoff_bundle(root, hand, at="2099-12-31T00:00:00+00:00")
    assert cli("review").code == 0
    url = (root.path / "error_review" / "index.html").as_uri()

    browser.goto(url)
    assert browser.js("document.body.dataset.ready") == "1"
    escalated = [ids["ai"], ids["quarantined"], ids["infra"], hand]
    assert sorted(visible(browser, "section#tab-escalated article.card")) == sorted(escalated)
    assert visible(browser, "article.card")[0] == hand  # newest first
    assert len(visible(browser, "form.filters select")) == 3
    assert len(visible(browser, f"[id='{ids['ai']}'] svg.chart rect")) >= 4  # one bar a check
    assert browser.js("document.getElementById('shown').textContent") == "4 of 4 shown"
    save(browser, tmp_path, "review.png")

    # choosing a step in the filter hides every other card and updates the hash
    browser.js(
        "var s = document.querySelector('select[name=step]'); s.value = 'typecheck';"
        "s.dispatchEvent(new Event('change', {bubbles: true})); 1"
    )
    assert visible(browser, "article.card") == [ids["ai"]]
    assert browser.js("location.hash") == "#tab=escalated&step=typecheck"
    assert browser.js("document.getElementById('shown').textContent") == "1 of 4 shown"
    save(browser, tmp_path, "review-filtered.png")

    # the filter from the URL hash: failure class `code` leaves only the hand-written bundle
    show(browser, url + "#class=code", "#tab=escalated&class=code")
    assert visible(browser, "article.card") == [hand]
    reason = "same error after 2 attempts"
    show(
        browser,
        url + "#reason=same+error+after+2+attempts",
        "#tab=escalated&reason=" + reason.replace(" ", "+"),
    )
    assert visible(browser, "article.card") == [hand]
    show(browser, url + "#tab=resolved", "#tab=resolved")
    assert visible(browser, "article.card") == [ids["resolved"]]
    # opening a card renders its details (timeline, diff) from the embedded data
    show(browser, url + "#tab=escalated", "#tab=escalated")
    browser.js(f"document.querySelector(\"details[data-id='{ids['ai']}']\").open = true; 1")
    time.sleep(0.2)
    text = browser.js(f"document.querySelector(\"details[data-id='{ids['ai']}']\").innerText")
    assert "S1_AIDER_RECHECK" in text and "+    return 1" in text
    assert "aider: replaced the string literal" in text


def test_a_thousand_escalations_render_under_two_seconds(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Browser
) -> None:
    ids = build_real(cli, tmp_path, monkeypatch)
    clone_escalated(root, ids["ai"], 997)
    started = time.monotonic()
    r = cli("review", "--json")
    build_s = time.monotonic() - started
    assert r.code == 0 and r.json()["escalated"] == 1000, r.err
    url = (root.path / "error_review" / "index.html").as_uri()
    started = time.monotonic()
    browser.goto(url + "#step=lint")
    # wait for two animation frames after load: the page has been laid out and painted
    browser.js("new Promise(function (ok) { requestAnimationFrame(function () {"
               " requestAnimationFrame(function () { ok(1); }); }); })")  # fmt: skip
    wall_ms = (time.monotonic() - started) * 1000
    in_page_ms = browser.js("performance.now()")
    shown = browser.js("document.getElementById('shown').textContent")
    save(browser, tmp_path, "review-1000.png")
    print(
        f"1000 escalated: build {build_s:.2f}s, browser {wall_ms:.0f} ms wall, {in_page_ms:.0f} ms in page"
    )
    assert shown == "251 of 1000 shown"  # 250 clones and the real infra incident
    assert wall_ms < RENDER_BUDGET_MS and in_page_ms < RENDER_BUDGET_MS
