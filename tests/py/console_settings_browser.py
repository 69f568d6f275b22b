"""The console's settings page and uploads in headless Chromium (issue 59), driven by
Playwright through Debian's chromium (executable_path; never Playwright's own browser).

Usage: console_settings_browser.py CONSOLE_URL ACCESS_KEY SECRET_KEY CHROMIUM PRIVATE_URL

The gateway holds bucket `fresh` (nothing set, a private object at PRIVATE_URL, which an
anonymous GET must not read unless the bucket is made public) and an empty bucket `upl`.

1. Every Save of the untouched settings page of `fresh` is pressed, one after the other.
2. A public policy is saved: the question is dismissed (nothing may change), then saved again
   and accepted.
3. A file is uploaded into `upl`; its Cancel button must be gone and disabled once it is done.

Prints `RESULT {...}` with what was seen; the Rust side checks the bucket through S3.
"""

import json
import sys
import urllib.error
import urllib.request

from playwright.sync_api import sync_playwright

url, ak, sk, chromium, private_url = sys.argv[1:6]
result = {"dialogs": []}
answer = {"accept": False}


def anonymous_get():
    try:
        with urllib.request.urlopen(private_url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def on_dialog(d):
    result["dialogs"].append(d.message)
    if answer["accept"]:
        d.accept()
    else:
        d.dismiss()


with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium,
                                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    page = browser.new_page(viewport={"width": 1100, "height": 720})
    page.on("dialog", on_dialog)

    # A failed sign-in keeps the access key typed.
    page.goto(url + "/login")
    page.fill("#access_key", ak)
    page.fill("#secret", "wrong")
    page.click("button[type=submit]")
    page.wait_for_selector("#error")
    result["kept_access_key"] = page.input_value("#access_key")
    page.fill("#access_key", ak)
    page.fill("#secret", sk)
    page.click("button[type=submit]")
    page.wait_for_selector("#buckets")

    # 1. The untouched page: every Save pressed.
    page.goto(url + "/settings?bucket=fresh")
    page.wait_for_selector("#doc-policy")
    subs = page.eval_on_selector_all("button[id^=save-]", "els => els.map(e => e.id.slice(5))")
    result["subs"] = subs
    result["labels_before"] = page.eval_on_selector_all("section.setting h2 small", "els => els.map(e => e.textContent)")
    result["policy_editor"] = page.input_value("#doc-policy")
    result["policy_placeholder"] = page.get_attribute("#doc-policy", "placeholder")
    saved = []
    for sub in subs:
        page.click(f"#save-{sub}")
        page.wait_for_load_state("load")
        page.wait_for_selector("#saved, p.error")
        saved.append(page.text_content("#saved, p.error"))
    result["untouched_saved"] = saved
    result["labels_after"] = page.eval_on_selector_all("section.setting h2 small", "els => els.map(e => e.textContent)")
    result["untouched_dialogs"] = list(result["dialogs"])
    result["anonymous_after_untouched"] = anonymous_get()

    # The example is put in the editor only on request.
    page.click("#example-policy")
    result["example_inserted"] = page.input_value("#doc-policy") == result["policy_placeholder"]

    # 2. A public policy: asked first, naming what becomes public.
    public = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::fresh/*"}]}, indent=2)
    page.fill("#doc-policy", public)
    answer["accept"] = False
    page.click("#save-policy")
    page.wait_for_selector("#confirm-policy")
    page.wait_for_function("document.getElementById('confirm-note').textContent.length > 0")
    result["dismissed"] = {
        "dialog": result["dialogs"][-1] if len(result["dialogs"]) > len(result["untouched_dialogs"]) else None,
        "note": page.text_content("#confirm-note"),
        "label": page.text_content("#title-policy small"),
        "anonymous": anonymous_get(),
    }
    # Saved again, and accepted this time.
    answer["accept"] = True
    asked = len(result["dialogs"])
    page.fill("#doc-policy", public)
    page.click("#save-policy")
    page.wait_for_selector("#saved")
    result["accepted"] = {
        "asked": len(result["dialogs"]) - asked,
        "saved": page.text_content("#saved"),
        "label": page.text_content("#title-policy small"),
        "anonymous": anonymous_get(),
    }

    # 3. An upload: once done, its Cancel button is neither shown nor usable.
    page.goto(url + "/browse?bucket=upl")
    page.wait_for_selector("#pick-files", state="attached")
    page.set_input_files("#pick-files", files=[{"name": "one.bin", "mimeType": "application/octet-stream",
                                                "buffer": b"x" * (1536 * 1024)}])
    page.wait_for_selector("#queue li[data-state=done]", timeout=60000)
    cancel = page.query_selector("#queue li[data-state=done] button")
    result["upload"] = {
        "state": page.get_attribute("#queue li", "data-state"),
        "cancel_visible": cancel.is_visible(),
        "cancel_disabled": cancel.is_disabled(),
        "total": page.text_content("#total-text"),
    }
    browser.close()
print("RESULT " + json.dumps(result, sort_keys=True))
