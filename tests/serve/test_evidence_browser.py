"""The evidence on every card, in a real headless Chromium: a test failure and a missing
credential captured with `incidents run` and escalated by the real step service show, on
the review page and on the live dashboard, what failed (each failing test with its
assertion message, each finding with file:line and code, the redacted log tail,
occurrences) and the decision that fits the kind. The pictures of the two dashboard cards
go to tests/artifacts/ (gitignored); with INCIDENTS_SCREENSHOTS=1 they replace the
README's pictures in docs/."""

from __future__ import annotations

import base64
import json
import os
import sys
from functools import partial
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import REPO, TIERS_OFF, Cli, use_config
from tests.review.chromium import Browser
from tests.serve.server import Server, running
from tests.serve.test_browser import present, wait_for

SHOTS = REPO / ("docs" if os.environ.get("INCIDENTS_SCREENSHOTS") == "1" else "tests/artifacts")
WINDOW = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
ARTIFACTS = REPO / "tests" / "artifacts"  # gitignored
PICTURE = {"width": 1000, "height": 900, "deviceScaleFactor": 1, "mobile": False}
PRICING = "def total(xs):\n    return sum(xs) + 1\n"
TEST_PRICING = (
    "import os\n\nfrom pricing import total\n\n\n"
    "def test_total():\n"
    '    assert total([1, 2]) == 3, "total of [1, 2] must be 3"\n\n\n'
    "def test_empty():\n    assert total([]) == 0\n"
)
DEPLOY = (
    "import os, sys\nprint('deploying build 42 to staging')\n"
    "if not os.environ.get('DEPLOY_TOKEN'):\n"
    "    sys.exit('error: environment variable DEPLOY_TOKEN is not set')\n"
)


def _run(cli: Cli, ws: Path, step: str, targets: list[str], *argv: str) -> str:
    files = [x for t in targets for x in ("--python-file", t)]
    r = cli("run", "--step", step, "--workdir", str(ws), *files, "--", sys.executable, *argv)
    assert r.code == 1, r.err
    incident_id = r.err.rsplit("incident ", 1)[1].split()[0]
    assert cli("drive", incident_id).code == 0
    return incident_id


@pytest.fixture
def escalations(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """A test failure (pytest and ruff check its targets) and a missing credential, both
    escalated by the real service (no fixer tier: a person decides)."""
    use_config(tmp_path, monkeypatch, '[checks]\ntools = ["ruff", "pytest"]\n' + TIERS_OFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pricing.py").write_text(PRICING)
    (ws / "test_pricing.py").write_text(TEST_PRICING)
    (ws / "deploy.py").write_text(DEPLOY)
    monkeypatch.delenv("DEPLOY_TOKEN", raising=False)
    monkeypatch.chdir(ws)
    pytest_argv = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_pricing.py")
    targets = ["pricing.py", "test_pricing.py"]
    return {
        "tests": _run(cli, ws, "tests", targets, *pytest_argv),
        "env": _run(cli, ws, "deploy", [], "deploy.py"),
    }


def texts(browser: Browser, selector: str) -> list[str]:
    found: list[str] = browser.js(
        f"Array.from(document.querySelectorAll({json.dumps(selector)}))"
        ".map(function (e) { return e.textContent; })"
    )
    return found


def card_picture(browser: Browser, selector: str, name: str, where: Path = SHOTS) -> Path:
    """A picture of one element (its box on the page, scrolled into view)."""
    box = browser.js(
        f"(function () {{ var e = document.querySelector({json.dumps(selector)});"
        " e.scrollIntoView(); var r = e.getBoundingClientRect();"
        " return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height};"
        " })()"
    )
    clip = {**box, "scale": 1}
    data = browser.call(
        "Page.captureScreenshot",
        {"format": "png", "clip": clip, "captureBeyondViewport": True},
        session=True,
    )["data"]
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_bytes(base64.b64decode(data))
    return path


def check_test_failure(headline: str, said: str, incident_id: str) -> None:
    """A test failure's card: its tests with their assertion messages, its findings with
    file:line and code, a requeue; never the counts alone."""
    assert headline.startswith("2 failing test(s): ") and "test_total" in headline, headline
    assert "AssertionError: total of [1, 2] must be 3" in headline
    assert "AssertionError: total of [1, 2] must be 3" in said
    assert "test_empty" in said and "assert 1 == 0" in said
    assert "test_pricing.py:1" in said and "F401" in said  # the finding, file:line and code
    assert f"resolve-escalation {incident_id} --guidance" in said and "--requeue" in said


def check_missing_credential(headline: str, said: str, incident_id: str) -> None:
    """A missing credential's card names what is missing and says to set it, then requeue."""
    assert headline == "missing environment variable DEPLOY_TOKEN", headline
    assert "set DEPLOY_TOKEN in the step's environment" in said
    assert f"resolve-escalation {incident_id} --guidance" in said


def test_the_cards_show_the_evidence_on_the_review_page_and_the_dashboard(
    cli: Cli, root: Root, escalations: dict[str, str], browser: Browser
) -> None:
    """One archive for both pages (it takes real pytest and ruff runs to build)."""
    review_page(cli, root, escalations, browser)
    dashboard(root, escalations, browser)


def review_page(cli: Cli, root: Root, escalations: dict[str, str], browser: Browser) -> None:
    assert cli("review").code == 0
    browser.goto((root.path / "error_review" / "index.html").as_uri())
    tests, env = escalations["tests"], escalations["env"]
    for kind, check in (("tests", check_test_failure), ("env", check_missing_credential)):
        card = f"article[id='{escalations[kind]}']"
        [headline] = texts(browser, f"{card} .headline")
        check(headline, texts(browser, card)[0], escalations[kind])
    assert "occurrences: 1" in texts(browser, f"article[id='{tests}']")[0]
    # the log tail, rendered when opened: the output itself, redacted
    browser.js(f"document.querySelector(\"details.log[data-id='{env}#log']\").open = true; 1")
    wait_for(lambda: present(browser, f"details.log[data-id='{env}#log'] pre"), "the log tail")
    log = texts(browser, f"details.log[data-id='{env}#log'] pre")[0]
    assert "deploying build 42 to staging" in log and "DEPLOY_TOKEN is not set" in log
    browser.call("Emulation.setDeviceMetricsOverride", PICTURE, session=True)
    card_picture(browser, f"article[id='{tests}']", "review-card-test-failure.png", ARTIFACTS)


def dashboard(root: Root, escalations: dict[str, str], browser: Browser) -> None:
    tests, env = escalations["tests"], escalations["env"]
    with running(root.path) as server:
        answer = server.call("GET", f"/api/incidents/{env}").json()["evidence"]
        assert answer["headline"] == "missing environment variable DEPLOY_TOKEN"
        assert answer["suggestion"]["kind"] == "set_env"
        assert answer["missing"] == ["DEPLOY_TOKEN"]
        browser.call("Emulation.setDeviceMetricsOverride", WINDOW, session=True)
        show_dashboard(server, browser)
        for kind, check in (("tests", check_test_failure), ("env", check_missing_credential)):
            card = f'.card[data-id="{escalations[kind]}"]'
            wait_for(partial(present, browser, f"{card} .decide"), "the card's evidence")
            [headline] = texts(browser, f"{card} .headline")
            check(headline, texts(browser, card)[0], escalations[kind])
        said = texts(browser, f'.card[data-id="{tests}"]')[0]
        assert "seen 1x" in said
        browser.call("Emulation.setDeviceMetricsOverride", PICTURE, session=True)
        card_picture(browser, f'.card[data-id="{tests}"]', "card-test-failure.png")
        card_picture(browser, f'.card[data-id="{env}"]', "card-missing-credential.png")
        browser.js(f"document.querySelector('.card[data-id=\"{env}\"] details.log').open = true")
        log = texts(browser, f'.card[data-id="{env}"] details.log pre')[0]
        assert "error: environment variable DEPLOY_TOKEN is not set" in log


def show_dashboard(server: Server, browser: Browser) -> None:
    browser.goto(f"http://{server.host}/#key={server.token}")
    wait_for(lambda: present(browser, ".card"), "the escalated cards")
