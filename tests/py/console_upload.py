"""Console uploads and the console's guards in headless Chromium (issue 39), driven by
Playwright through Debian's chromium (executable_path; never Playwright's own download).

Usage: console_upload.py CONSOLE_URL S3_URL ACCESS_KEY SECRET_KEY CHROMIUM FILES_DIR MONGO_URI DB TRAP_URL

FILES_DIR holds big.bin (50 MiB), two.bin (12 MiB), slow.bin (20 MiB) and the folder site/.
The gateway holds bucket `uploads` (empty); TRAP_URL is a page of another origin with a form that
posts to the console. Prints `RESULT {...}` with what happened.
"""

import datetime
import json
import os
import sys
import time

import boto3
import pymongo
import webm
from playwright.sync_api import sync_playwright

console, s3, ak, sk, chromium, files, mongo_uri, db_name, trap = sys.argv[1:10]
result = {}

# Every value the total progress bar takes, observed from outside the console's script.
OBSERVE = """
window.__totals = [];
new MutationObserver(function (records) {
  records.forEach(function (r) {
    if (r.target.id === 'total') { window.__totals.push([r.target.getAttribute('value'), r.target.getAttribute('max')]); }
  });
}).observe(document, { subtree: true, attributes: true, attributeFilter: ['value'] });
"""


def rows(page):
    return page.eval_on_selector_all(
        "#queue li", "els => els.map(e => [e.querySelector('.name').textContent, e.dataset.state, e.querySelector('.state').textContent])")


def wait_states(page, n, timeout=180_000):
    """Waits until n rows have settled (uploaded, failed or cancelled)."""
    page.wait_for_function(
        "n => document.querySelectorAll('#queue li[data-state=done], #queue li[data-state=failed], #queue li[data-state=cancelled]').length >= n",
        arg=n, timeout=timeout)


with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium,
                                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    page = browser.new_page()
    page.add_init_script(OBSERVE)
    console_errors = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)

    page.goto(console + "/login")
    page.fill("#access_key", ak)
    page.fill("#secret", sk)
    page.click("button[type=submit]")
    page.wait_for_selector("#buckets")

    # A 50 MiB file goes up as multipart, straight to the S3 endpoint, the bar advancing.
    page.goto(console + "/browse?bucket=uploads")
    page.wait_for_selector("#upload")
    puts = []
    page.on("request", lambda r: puts.append(r.url) if r.method == "PUT" else None)
    started = time.time()
    page.set_input_files("#pick-files", os.path.join(files, "big.bin"))
    wait_states(page, 1)
    seconds = time.time() - started
    totals = page.evaluate("window.__totals")
    size = 50 * 1024 * 1024
    between = sorted({int(v) for v, m in totals if v is not None and 0 < int(v) < size})
    result["big"] = {"rows": rows(page), "seconds": round(seconds, 2),
                     "mb_per_s": round(size / 1e6 / max(seconds, 1e-3), 1),
                     "intermediate_values": len(between), "final": totals[-1] if totals else None,
                     "puts": len(puts), "puts_to_s3": sum(1 for u in puts if u.startswith(s3 + "/")),
                     "part_numbers": sorted({int(u.split("partNumber=")[1].split("&")[0]) for u in puts})}

    # A part that fails once is sent again, and the upload completes.
    failed = {"n": 0, "part2": 0}

    def flaky(route):
        if "partNumber=2&" in route.request.url:
            failed["part2"] += 1
            if failed["n"] == 0:
                failed["n"] += 1
                route.abort("connectionreset")
                return
        route.continue_()

    page.route(lambda u: u.startswith(s3 + "/"), flaky)
    page.set_input_files("#pick-files", os.path.join(files, "two.bin"))
    wait_states(page, 2)
    page.unroute_all()
    result["retry"] = {"rows": rows(page), "attempts_of_part_2": failed["part2"]}

    # A folder: every file under it, its relative path kept in the key.
    page.set_input_files("#pick-folder", os.path.join(files, "site"))
    page.wait_for_function("document.querySelectorAll('#queue li').length >= 5")
    wait_states(page, 5)
    result["folder"] = {"rows": rows(page)}

    # Cancel: the parts are held at the network until the cancel, then the upload is aborted.
    held = []
    page.route(lambda u: u.startswith(s3 + "/"), lambda route: held.append(route))
    page.set_input_files("#pick-files", os.path.join(files, "slow.bin"))
    page.wait_for_function("document.querySelectorAll('#queue li').length >= 6")
    deadline = time.time() + 30
    while not held and time.time() < deadline:
        page.wait_for_timeout(50)
    result["held_before_cancel"] = len(held)
    with page.expect_response(lambda r: "/uploads/abort" in r.url) as aborted:
        page.click("#queue li:nth-child(6) button")
    result["abort_status"] = aborted.value.status
    for r in held:
        try:
            r.abort()
        except Exception:
            pass
    page.unroute_all(behavior="ignoreErrors")
    wait_states(page, 6)
    result["cancel"] = {"rows": rows(page)}

    # A reload shows the uploaded objects in the listing.
    page.click("#refresh")
    page.wait_for_selector("#objects")
    result["listed"] = page.eval_on_selector_all("#objects a.key, #objects tr.folder a",
                                                 "els => els.map(e => e.textContent)")

    # Live: the open folder follows the bucket's changes (objects written and deleted with
    # boto3 through the S3 endpoint) without a reload. Changes are recorded for a listener
    # once its registration is seen (within a second), so objects are written until the
    # first one shows; after that every change must show.
    page.wait_for_selector("#objects[data-live-state=on]", timeout=30_000)
    page.evaluate("window.__same_page = true")
    s3c = boto3.client("s3", endpoint_url=s3, aws_access_key_id=ak, aws_secret_access_key=sk, region_name="us-east-1")
    first = None
    for i in range(40):
        s3c.put_object(Bucket="uploads", Key=f"live-{i:02d}.txt", Body=b"live")
        try:
            page.wait_for_selector(f"#objects tr[data-key='live-{i:02d}.txt']", timeout=500)
            first = i
            break
        except Exception:
            pass
    s3c.put_object(Bucket="uploads", Key="newdir/inside.txt", Body=b"x")
    s3c.put_object(Bucket="uploads", Key="aaa.txt", Body=b"sorted first")
    s3c.put_object(Bucket="uploads", Key="gone.txt", Body=b"soon deleted")
    page.wait_for_selector("#objects tr[data-prefix='newdir/']", timeout=10_000)
    page.wait_for_selector("#objects tr[data-key='aaa.txt']", timeout=10_000)
    page.wait_for_selector("#objects tr[data-key='gone.txt']", timeout=10_000)
    s3c.delete_object(Bucket="uploads", Key="gone.txt")
    page.wait_for_selector("#objects tr[data-key='gone.txt']", state="detached", timeout=10_000)
    result["live"] = {"first": first, "same_page": page.evaluate("window.__same_page === true"),
                      "rows": page.eval_on_selector_all("#objects tbody tr", "els => els.map(e => e.dataset.key || e.dataset.prefix)")}

    # A video (VP8 in WebM, encoded by Chromium itself) uploaded and previewed: it seeks, the
    # browser asking for byte ranges.
    maker = browser.new_page()
    maker.goto(trap)
    clip = os.path.join(files, "clip.webm")
    with open(clip, "wb") as f:
        f.write(webm.webm(maker))
    maker.close()
    page.set_input_files("#pick-files", clip)
    wait_states(page, 1)
    raw = []
    page.on("response", lambda r: raw.append([r.status, r.request.headers.get("range")]) if "/raw?" in r.url else None)
    page.goto(console + "/object?bucket=uploads&key=clip.webm")
    page.wait_for_selector("video#preview")
    seek = page.evaluate("""async () => {
      const v = document.getElementById('preview');
      const event = (name) => new Promise((ok, fail) => {
        v.addEventListener(name, ok, { once: true });
        v.addEventListener('error', () => fail(new Error('media error ' + (v.error && v.error.code))), { once: true });
        setTimeout(() => fail(new Error('no ' + name)), 20000);
      });
      if (v.readyState < 1) { await event('loadedmetadata'); }
      const duration = v.duration;
      v.currentTime = 5.5;
      await event('seeked');
      return { duration: duration, at: v.currentTime, width: v.videoWidth };
    }""")
    seek["raw"] = raw
    seek["bytes"] = os.path.getsize(clip)
    result["video"] = seek

    # CSRF: a page of another origin on the same site (the S3 endpoint) posts a form to the
    # console. The browser sends the session cookie (same site), the console refuses it.
    page.goto(trap)
    with page.expect_response(lambda r: "/buckets/create" in r.url) as posted:
        page.click("#go")
    result["csrf"] = {"status": posted.value.status, "origin": posted.value.request.header_value("origin")}

    # An expired session (its last use moved back past the idle limit in the database)
    # leads to the login page.
    page.goto(console + "/browse?bucket=uploads")
    page.wait_for_selector("#objects")
    sessions = pymongo.MongoClient(mongo_uri)[db_name]["__consoleSessions"]
    long_ago = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    moved = sessions.update_many({}, {"$set": {"seen": long_ago}})
    page.goto(console + "/browse?bucket=uploads")
    result["expired"] = {"moved": moved.modified_count, "at_login": page.url.endswith("/login"),
                         "form": page.query_selector("#access_key") is not None}
    result["console_errors"] = console_errors
    browser.close()
print("RESULT " + json.dumps(result, sort_keys=True))
