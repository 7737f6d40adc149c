"""The dashboard, found by review to die on a malformed `#key=` in its address: the
script threw before it rendered anything (a link that breaks the page)."""

from __future__ import annotations

import pytest

from incidents.layout import Root
from tests.helpers import Cli, capture
from tests.review.chromium import Browser
from tests.serve.server import Server
from tests.serve.test_browser import present, wait_for

pytestmark = pytest.mark.slow


def test_a_malformed_key_in_the_address_does_not_break_the_page(
    server: Server, browser: Browser, cli: Cli, root: Root
) -> None:
    shown = capture(cli, message="nightly export failed")
    browser.goto(f"http://{server.host}/#key=%E0%A4%A")  # not a UTF-8 escape
    wait_for(lambda: present(browser, f'#inbox tr[data-id="{shown}"]'), "the inbox row")
    wait_for(
        lambda: browser.js("document.getElementById('live').textContent") == "live", "the stream"
    )
    assert browser.js("location.hash") == ""  # taken out of the address all the same
    assert browser.js("sessionStorage.getItem('incidents.token')") is None
