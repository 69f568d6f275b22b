"""The web console in headless Chromium (issue 39), driven by Playwright through Debian's
chromium (executable_path; never Playwright's own browser download).

Usage: console_browser.py CONSOLE_URL ACCESS_KEY SECRET_KEY CHROMIUM VIEWER_KEY VIEWER_SECRET [SHOTS_DIR]

VIEWER_KEY has no rights of its own: the bucket policy saved through the settings page lets
it list and read bucket `media`, nothing else.

With SHOTS_DIR, the main screens are saved there as PNG (docs/console/, see console.md).

The gateway holds bucket `many` with 2,000 keys `k0000`..`k1999` and bucket `xss` with objects
named as markup. Prints `RESULT {...}` with what the pages showed.
"""

import json
import subprocess
import sys
import time

from playwright.sync_api import sync_playwright

url, ak, sk, chromium, viewer_ak, viewer_sk = sys.argv[1:7]
shots = sys.argv[7] if len(sys.argv) > 7 else ""
result = {}
dialogs = []
# Dialogs are dismissed, except where a step accepts one (and records it apart).
accept = []


def shot(page, name):
    if shots:
        page.screenshot(path=f"{shots}/{name}.png", full_page=False)

with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium,
                                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    page = browser.new_page(viewport={"width": 1100, "height": 720})
    def on_dialog(d):
        if accept:
            accept.append(d.message)
            d.accept()
        else:
            dialogs.append(d.message)
            d.dismiss()
    page.on("dialog", on_dialog)

    # A wrong secret is refused, on the page.
    page.goto(url + "/")
    result["redirected_to_login"] = page.url.endswith("/login")
    page.fill("#access_key", ak)
    page.fill("#secret", "wrong")
    page.click("button[type=submit]")
    result["wrong_secret"] = page.text_content("#error")

    # Sign in.
    page.fill("#access_key", ak)
    page.fill("#secret", "")
    shot(page, "login")
    page.fill("#secret", sk)
    page.click("button[type=submit]")
    page.wait_for_selector("#buckets")
    shot(page, "buckets")
    result["buckets"] = page.eval_on_selector_all("#buckets tbody a", "els => els.map(e => e.textContent)")

    # Browse and page through 2,000 keys.
    page.click("text=many")
    page.wait_for_selector("#objects")
    shot(page, "browse")
    seen = []
    pages = 0
    started = time.time()
    while True:
        pages += 1
        seen += page.eval_on_selector_all("#objects a.key", "els => els.map(e => e.textContent)")
        nxt = page.query_selector("#next")
        if not nxt:
            break
        nxt.click()
        page.wait_for_load_state("load")
    result["paging"] = {"pages": pages, "keys": len(seen), "distinct": len(set(seen)),
                        "first": seen[0], "last": seen[-1], "ordered": seen == sorted(seen),
                        "seconds": round(time.time() - started, 2)}

    # Keys named as markup render as text, and nothing runs.
    page.goto(url + "/browse?bucket=xss")
    page.wait_for_selector("#objects")
    result["xss_names"] = page.eval_on_selector_all("#objects a.key", "els => els.map(e => e.textContent)")
    result["xss_folders"] = page.eval_on_selector_all("#objects tr.folder a", "els => els.map(e => e.textContent)")
    result["xss_img_elements"] = page.eval_on_selector_all("#objects img, #objects script", "els => els.length")
    page.click("#objects tr.folder a")
    page.wait_for_selector("#objects")
    result["xss_in_folder"] = page.eval_on_selector_all("#objects a.key", "els => els.map(e => e.textContent)")
    result["xss_crumbs"] = page.text_content("nav.crumbs")
    page.goto(url + "/browse?bucket=xss")
    page.wait_for_selector("#objects")
    first = page.query_selector("#objects a.key")
    first.click()
    page.wait_for_selector("#key")
    result["xss_object_title"] = page.text_content("#key")

    # A share link, valid for 10 seconds: fetched by curl before it expires, refused after.
    # (Its date is whole seconds; with 3 s, rendering and curl on a loaded machine could use up
    # the link's life before the first fetch.)
    page.fill("#seconds", "10")
    page.click("text=Make a link")
    page.wait_for_selector("#share-url")
    # Signed before it is shown: it expires at most 10 s after `shown`.
    shown = time.time()
    link = page.input_value("#share-url")
    before = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", link], capture_output=True, text=True)
    time.sleep(max(0.0, shown + 11.5 - time.time()))
    after = subprocess.run(["curl", "-s", "-w", " %{http_code}", link], capture_output=True, text=True)
    result["share"] = {"before": before.stdout, "after": after.stdout[-3:], "after_body": after.stdout[:300]}

    # An image previews at its natural size; tags are edited; a version is restored.
    page.goto(url + "/object?bucket=media&key=logo.png")
    page.wait_for_selector("#preview")
    page.wait_for_function("document.getElementById('preview').complete")
    result["image_width"] = page.evaluate("document.getElementById('preview').naturalWidth")
    shot(page, "object")
    page.fill("#tagset", "team=web\nstage=draft")
    page.click("text=Save tags")
    page.wait_for_selector("#tags")
    result["tags"] = page.eval_on_selector_all("#tags li", "els => els.map(e => e.textContent)")
    page.goto(url + "/object?bucket=media&key=notes.txt")
    page.wait_for_selector("#preview-text")
    result["text_before"] = page.text_content("#preview-text")
    page.click("#versions button.restore")
    page.wait_for_selector("#preview-text")
    result["text_after"] = page.text_content("#preview-text")
    result["versions_after"] = page.eval_on_selector_all("#versions tbody tr", "els => els.length")

    # Bucket settings: a policy with a JSON error is shown with its place, then one that S3
    # refuses shows AWS's reason, then a good one is saved; a CORS document too.
    page.goto(url + "/browse?bucket=media")
    page.click("#settings-link")
    page.wait_for_selector("#doc-policy")
    result["versioning_doc"] = page.input_value("#doc-versioning")
    broken = '{\n  "Version": "2012-10-17"\n  "Statement": []\n}'
    page.fill("#doc-policy", broken)
    page.click("#save-policy")
    page.wait_for_selector("#error-policy")
    focused = page.evaluate("[document.activeElement.id, document.activeElement.selectionStart]")
    result["policy_json_error"] = {"text": page.text_content("#error-policy"), "kept": page.input_value("#doc-policy"),
                                   "focused": focused[0], "cursor": focused[1], "expected_cursor": broken.index('"Statement')}
    page.fill("#doc-policy", json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Maybe", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::media/*"}]}))
    page.click("#save-policy")
    page.wait_for_selector("#error-policy")
    result["policy_refused"] = page.text_content("#error-policy")
    page.eval_on_selector("#setting-policy", "e => e.scrollIntoView()")
    shot(page, "settings")
    # The good policy also lets the viewer key list and read `media` (used at the end).
    good = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "ReadLogo", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::media/logo.png"},
        {"Effect": "Allow", "Principal": {"AWS": viewer_ak}, "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::media"},
        {"Effect": "Allow", "Principal": {"AWS": viewer_ak}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::media/*"}]}, indent=2)
    # Its first statement makes logo.png public: the console asks first (issue 59).
    page.fill("#doc-policy", good)
    accept.append("accepting")
    page.click("#save-policy")
    page.wait_for_selector("#saved")
    result["policy_asked"] = accept[1:]
    accept.clear()
    result["policy_saved"] = {"status": page.text_content("#saved"), "errors": page.query_selector("#error-policy") is not None,
                              "shown": json.loads(page.input_value("#doc-policy"))["Statement"][0]["Sid"]}
    page.fill("#doc-cors", "<CORSConfiguration><CORSRule><AllowedMethod>BREW</AllowedMethod><AllowedOrigin>*</AllowedOrigin></CORSRule></CORSConfiguration>")
    page.click("#save-cors")
    page.wait_for_selector("#error-cors")
    result["cors_refused"] = page.text_content("#error-cors")

    # Markdown renders, its markup and script links inert.
    page.goto(url + "/object?bucket=media&key=README.md")
    page.wait_for_selector("#preview-markdown")
    result["markdown"] = {
        "h1": page.text_content("#preview-markdown h1"),
        "links": page.eval_on_selector_all("#preview-markdown a", "els => els.map(e => e.getAttribute('href'))"),
        "elements": page.eval_on_selector_all("#preview-markdown img, #preview-markdown script", "els => els.length"),
        "text": page.text_content("#preview-markdown"),
    }

    # Sign out: the pages lead to the login again.
    page.click("text=Sign out")
    page.wait_for_selector("#access_key")
    page.goto(url + "/browse?bucket=many")
    result["after_logout"] = page.url.endswith("/login")

    # A key that its bucket policy lets read `media` only.
    page.fill("#access_key", viewer_ak)
    page.fill("#secret", viewer_sk)
    page.click("button[type=submit]")
    page.wait_for_selector("#buckets")
    result["viewer"] = {"admin_link": page.query_selector("#admin-link") is not None}
    page.goto(url + "/browse?bucket=media")
    page.wait_for_selector("#objects")
    result["viewer"]["media"] = page.eval_on_selector_all("#objects a.key", "els => els.map(e => e.textContent)")
    page.goto(url + "/browse?bucket=many")
    page.wait_for_selector("#objects")
    result["viewer"]["many_error"] = page.text_content("#error")
    result["viewer"]["many_keys"] = page.eval_on_selector_all("#objects a.key", "els => els.length")
    page.goto(url + "/admin")
    result["viewer"]["admin_page"] = page.text_content("main")
    result["dialogs"] = dialogs
    browser.close()
print("RESULT " + json.dumps(result, sort_keys=True))
