"""Opens one address in headless Chromium, as a reader pastes it into the address bar: no
host-resolver rules, so the name resolves as the browser itself resolves it (`*.localhost` to
the loopback). Usage: open_page.py URL CHROMIUM. Prints one JSON line `RESULT {...}`: the
status, the title and the body's text.
"""

import json
import sys

from playwright.sync_api import sync_playwright

url, chromium = sys.argv[1:3]
with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=chromium,
        args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    )
    page = browser.new_page()
    response = page.goto(url, wait_until="load")
    result = {
        "status": response.status if response else None,
        "title": page.title(),
        "text": page.inner_text("body"),
    }
    browser.close()
print("RESULT " + json.dumps(result, sort_keys=True))
