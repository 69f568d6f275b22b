"""The console's identity pages in headless Chromium (issue 60), driven by Playwright through
Debian's chromium (executable_path; never Playwright's own browser download).

Usage: console_identity_browser.py CONSOLE_URL ACCESS_KEY SECRET_KEY CHROMIUM

As root: creates user `bob`, a managed policy typed into the editor (first a malformed one,
refused on the page), attaches it to bob, creates bob's key and reads its secret from the
page; then signs in as bob and reads the effective permissions on bucket `photos`, key
`a.jpg` (and root's view of bob's). Prints `RESULT {...}` with what the pages showed.
"""

import json
import sys

from playwright.sync_api import sync_playwright

url, ak, sk, chromium = sys.argv[1:5]
result = {}

POLICY = """{
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "See", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::photos"},
    {"Sid": "Read", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*"}
  ]
}"""


def decisions(page):
    return page.eval_on_selector_all(
        "#decisions tbody tr",
        "rows => Object.fromEntries(rows.map(r => [r.dataset.action, r.querySelector('.decision').textContent]))",
    )


with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium,
                                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    page = browser.new_page(viewport={"width": 1100, "height": 720})
    page.on("dialog", lambda d: d.accept())

    page.goto(url + "/login")
    page.fill("#access_key", ak)
    page.fill("#secret", sk)
    page.click("button[type=submit]")
    page.wait_for_selector("#buckets")

    # A user, through the navigation.
    page.click("#identity-link")
    page.wait_for_selector("#create-user")
    page.fill("#user-name", "bob")
    page.fill("#user-tags", "team=photos")
    page.click("#create-user-button")
    page.wait_for_selector("#done")
    result["users"] = page.eval_on_selector_all("#users tbody tr", "rows => rows.map(r => r.dataset.user)")

    # A policy in the editor: a malformed one is refused on the page and kept in the editor.
    page.click("#nav-policies")
    page.wait_for_selector("#create-policy")
    page.fill("#policy-name", "bob-read")
    page.fill("#policy-doc", POLICY.replace('"Resource": "arn:aws:s3:::photos/*"', '"Resource": "photos/*"'))
    page.click("#create-policy-button")
    page.wait_for_selector("#editor-error")
    result["malformed"] = page.text_content("#editor-error")
    result["kept"] = page.input_value("#policy-doc") != ""
    page.fill("#policy-doc", POLICY)
    page.click("#create-policy-button")
    page.wait_for_selector("#done")
    arn = page.eval_on_selector("#policies tr[data-policy='bob-read'] td.key", "e => e.textContent")
    result["policy_arn"] = arn

    # Attach it to bob, and make bob a key.
    page.goto(url + "/identity/user?name=bob")
    page.wait_for_selector("#attach")
    page.fill("#attach-arn", arn)
    page.click("#attach-button")
    page.wait_for_selector("#done")
    result["attached"] = page.eval_on_selector_all("#attached tr", "rows => rows.map(r => r.dataset.arn)")
    page.click("#create-key-button")
    page.wait_for_selector("#new-key")
    bob_key = page.input_value("#new-key-id")
    bob_secret = page.input_value("#new-key-secret")
    result["bob_key"] = bob_key
    result["bob_secret"] = bob_secret
    page.reload()
    result["secret_after_reload"] = bob_secret in page.content()

    # Root's view of bob.
    page.click("#effective-link")
    page.wait_for_selector("#access-form")
    page.fill("#access-bucket", "photos")
    page.fill("#access-key", "a.jpg")
    page.click("#access-show")
    page.wait_for_selector("#decisions")
    result["root_view"] = decisions(page)
    result["root_subject"] = page.text_content("#subject")

    # Bob signs in with his own key and sees what he may do.
    page.click("text=Sign out")
    page.wait_for_url("**/login")
    page.fill("#access_key", bob_key)
    page.fill("#secret", bob_secret)
    page.click("button[type=submit]")
    page.wait_for_load_state("load")
    page.click("#identity-link")
    page.wait_for_load_state("load")
    result["bob_identity_error"] = page.text_content("#error")
    page.click("#nav-access")
    page.wait_for_selector("#access-form")
    page.fill("#access-bucket", "photos")
    page.fill("#access-key", "a.jpg")
    page.click("#access-show")
    page.wait_for_selector("#decisions")
    result["bob_view"] = decisions(page)
    result["bob_subject"] = page.text_content("#subject")
    browser.close()
print("RESULT " + json.dumps(result, sort_keys=True))
