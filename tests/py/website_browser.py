"""A static site deployed with `aws s3 sync` and loaded in headless Chromium through the
website endpoint (issue 38).

Usage: website_browser.py ENDPOINT ACCESS_KEY SECRET_KEY BUCKET SITE_URL CHROMIUM

The bucket exists, is public and has a website configuration whose index and error
documents are `index.html` (a single-page app's fallback). The script writes the site
(index.html loading CSS, JS and an image from subfolders, a client-side router), syncs it,
loads SITE_URL and a deep link with Playwright driving the given Chromium (never Playwright's
own browser download), and prints one JSON line `RESULT {...}` of what the pages showed.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib
from urllib.parse import urlparse

from playwright.sync_api import sync_playwright

endpoint, ak, sk, bucket, site_url, chromium = sys.argv[1:7]


def png(width, height):
    """A solid PNG of the given size (the image the page must decode)."""

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + b"\x20\x80\xc0" * width
    raw = row * height
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


INDEX = """<!doctype html>
<html><head><meta charset="utf-8"><title>grids3 site</title>
<link rel="stylesheet" href="/css/site.css"></head>
<body><h1 id="title">A site on grids3</h1>
<div id="view">loading</div>
<img id="logo" src="/img/logo.png" alt="logo">
<script src="/js/app.js"></script></body></html>
"""

CSS = "#title { color: rgb(12, 34, 56); letter-spacing: 3px; }\n"

# The router renders a view from the path: `/` is home; any other path (a deep link served
# through the error document) is that route.
JS = """(function () {
  var path = window.location.pathname;
  var view = document.getElementById('view');
  view.textContent = path === '/' || path === '/index.html' ? 'route:home' : 'route:' + path.slice(1);
  document.body.setAttribute('data-script', 'ran');
})();
"""

with tempfile.TemporaryDirectory() as d:
    site = os.path.join(d, "site")
    for sub in ("css", "js", "img"):
        os.makedirs(os.path.join(site, sub))
    files = {
        "index.html": INDEX.encode(),
        "css/site.css": CSS.encode(),
        "js/app.js": JS.encode(),
        "img/logo.png": png(37, 11),
    }
    for name, data in files.items():
        with open(os.path.join(site, name), "wb") as f:
            f.write(data)
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk, AWS_DEFAULT_REGION="us-east-1")
    aws = os.path.join(os.path.dirname(sys.executable), "aws")
    sync = subprocess.run(
        [aws, "--endpoint-url", endpoint, "s3", "sync", site, "s3://" + bucket, "--delete"],
        env=env,
        capture_output=True,
        text=True,
    )
    if sync.returncode != 0:
        print("sync failed:", sync.stdout, sync.stderr)
        sys.exit(1)

host = site_url.split("//", 1)[1].split("/", 1)[0].split(":")[0]
result = {"synced": sorted(files)}
with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=chromium,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            # The site's name resolves to the loopback, as DNS (or a CNAME) would send it.
            "--host-resolver-rules=MAP %s 127.0.0.1" % host,
        ],
    )
    page = browser.new_page()
    failed = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    statuses = {}
    page.on("response", lambda r: statuses.__setitem__(urlparse(r.url).path, r.status))
    page.goto(site_url + "/", wait_until="load")
    page.wait_for_selector("body[data-script=ran]", timeout=15000)
    result["home"] = {
        "view": page.text_content("#view"),
        "color": page.evaluate("getComputedStyle(document.getElementById('title')).color"),
        "spacing": page.evaluate("getComputedStyle(document.getElementById('title')).letterSpacing"),
        "img_width": page.evaluate("document.getElementById('logo').naturalWidth"),
        "img_height": page.evaluate("document.getElementById('logo').naturalHeight"),
    }
    result["home_statuses"] = dict(statuses)
    statuses.clear()
    page.goto(site_url + "/settings/profile", wait_until="load")
    page.wait_for_selector("body[data-script=ran]", timeout=15000)
    result["deep"] = {
        "view": page.text_content("#view"),
        "color": page.evaluate("getComputedStyle(document.getElementById('title')).color"),
        "img_width": page.evaluate("document.getElementById('logo').naturalWidth"),
    }
    result["deep_statuses"] = statuses
    result["failed"] = failed
    browser.close()
print("RESULT " + json.dumps(result, sort_keys=True))
