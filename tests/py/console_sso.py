"""Console single sign-on through a real OpenID provider (issue 61): node's oidc-provider
(tests/js/oidc_provider.mjs, client `grids3-console`), its own login and consent pages, and
headless Chromium (Debian's, through Playwright's executable_path).

Usage:
  console_sso.py setup   CONSOLE ENDPOINT KEY SECRET ISSUER
  console_sso.py browser CONSOLE ENDPOINT KEY SECRET ISSUER CHROMIUM
  console_sso.py http    CONSOLE ENDPOINT KEY SECRET ISSUER
  console_sso.py delete  CONSOLE ENDPOINT KEY SECRET ISSUER

setup: buckets `team-docs` and `payroll`, the provider registered for `grids3-console`, role
`nobody` (trusts only sub `mallory`) and role `docs-reader` (trusts sub `ann`; may list
buckets, list and read `team-docs`).
browser: Chromium signs in as ann through the provider's pages, sees what the role allows
and is refused what it does not, makes a share link, signs out; the link dies with it.
http: the same flow over HTTP, posting the callback as the page's script does: a callback this
browser did not begin, an attacker's pending cookie planted in the victim's browser, a post
from another origin, a replayed callback and mallory (whom no role admits) get nothing; a new
sign-in ends the browser's previous session; ann's session cookies are printed for the caller.
delete: ann signs in, the role is deleted, the session ends.
Prints `RESULT {...}`.
"""
import json
import os
import re
import sys
import time
import urllib.parse

import boto3
import requests
from botocore.config import Config

from oidc_token import through_login

mode, console, endpoint, ak, sk, issuer = sys.argv[1:7]
CFG = Config(retries={"max_attempts": 1, "mode": "standard"})
iam = boto3.client("iam", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                   region_name="us-east-1", config=CFG)
host = issuer.split("://", 1)[1]
result = {}


def account():
    sts = boto3.client("sts", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                       region_name="us-east-1", config=CFG)
    return sts.get_caller_identity()["Account"]


def setup():
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                      region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
    for b, k, body in [("team-docs", "readme.txt", b"docs for the team"), ("payroll", "p.txt", b"pay")]:
        s3.create_bucket(Bucket=b)
        s3.put_object(Bucket=b, Key=k, Body=body)
    arn = iam.create_open_id_connect_provider(Url=issuer, ClientIDList=["grids3-console"])[
        "OpenIDConnectProviderArn"]

    def trust(sub):
        return json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"Federated": arn}, "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {"StringEquals": {f"{host}:sub": sub, f"{host}:aud": "grids3-console"}}}]})

    iam.create_role(RoleName="nobody", AssumeRolePolicyDocument=trust("mallory-not-really"))
    iam.create_role(RoleName="docs-reader", AssumeRolePolicyDocument=trust("ann"), MaxSessionDuration=7200)
    iam.put_role_policy(RoleName="docs-reader", PolicyName="docs", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "s3:ListAllMyBuckets", "Resource": "*"},
            {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::team-docs"},
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::team-docs/*"}]}))
    result["account"] = account()


def new_bind():
    return os.urandom(32).hex()


def provider_login(s, user, bind):
    """Starts a console sign-in in session `s` (as the sign-in page's script does, with the
    tab's `bind`) and goes through the provider's pages as `user`: the callback URL the
    provider sends the browser back to (not yet followed)."""
    r = s.get(console + "/login/sso?bind=" + bind, allow_redirects=False)
    assert r.status_code == 303, (r.status_code, r.text[:300])
    r = s.get(r.headers["location"], allow_redirects=False)
    while r.status_code in (302, 303):
        if r.headers["location"].startswith(console):
            # The provider's own session still stands: straight back, no pages.
            return r.headers["location"]
        r = s.get(urllib.parse.urljoin(r.url, r.headers["location"]), allow_redirects=False)
    return through_login(s, r, user, console)


def finish(s, cb, bind, headers=None):
    """What the callback page's script does: post the callback's code and state with the
    tab's `bind`."""
    q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(cb).query))
    q["bind"] = bind
    return s.post(console + "/login/sso/callback", data=q, headers=headers or {}, allow_redirects=False)


def error_of(r):
    m = re.search(r'id="error">([^<]*)<', r.text)
    return m.group(1) if m else ""


def who(cookie):
    r = requests.get(console + "/", cookies={"grids3_console": cookie}, allow_redirects=False)
    m = re.search(r'class="who"[^>]*>([^<]*)<', r.text)
    return [r.status_code, m.group(1) if m else ""]


def signed_in_session(user):
    s = requests.Session()
    bind = new_bind()
    cb = provider_login(s, user, bind)
    return s, finish(s, cb, bind)


def http_checks():
    r = requests.get(console + "/login")
    result["button"] = re.search(r'id="sso"[^>]*>([^<]*)<', r.text).group(1)
    r = requests.get(console + "/login/sso", allow_redirects=False)
    result["no_bind"] = r.status_code

    # The provider's redirect back lands on a page that changes nothing: a form to post.
    attacker, a_bind = requests.Session(), new_bind()
    cb = provider_login(attacker, "ann", a_bind)
    page = attacker.get(cb, allow_redirects=False)
    result["callback_page"] = [page.status_code, 'id="sso-finish"' in page.text,
                               "set-cookie" in {k.lower() for k in page.headers}]

    # A callback this browser did not begin: no pending cookie; another sign-in's state; the
    # attacker's own pending cookie planted in the victim's browser (the victim's tab posts
    # its own bind); a post from another origin.
    r = requests.post(console + "/login/sso/callback", data={"code": "c", "state": "s", "bind": a_bind},
                      allow_redirects=False)
    result["no_cookie"] = r.status_code
    # Posts any site can make do not use up the address's sign-in attempts (10 per 5 min).
    result["bogus_posts"] = sorted({requests.post(console + "/login/sso/callback", data={"state": "s", "bind": "0" * 64},
                                                  allow_redirects=False).status_code for _ in range(12)})
    victim, v_bind = requests.Session(), new_bind()
    victim.get(console + "/login/sso?bind=" + v_bind, allow_redirects=False)
    r = finish(victim, cb, v_bind)
    result["foreign_state"] = [r.status_code, victim.cookies.get("grids3_console")]
    tossed = requests.Session()
    tossed.cookies.set("grids3_sso", attacker.cookies.get("grids3_sso"))
    r = finish(tossed, cb, new_bind())
    result["tossed_cookie"] = [r.status_code, tossed.cookies.get("grids3_console"), error_of(r)]
    r = finish(attacker, cb, a_bind, headers={"Origin": "http://evil.example"})
    result["cross_origin"] = r.status_code

    # The attacker's own callback works once; replayed with the same pending cookie, the
    # state is spent.
    pending = attacker.cookies.get("grids3_sso")
    r = finish(attacker, cb, a_bind)
    result["own_callback"] = [r.status_code, r.headers.get("location")]
    cookie = attacker.cookies.get("grids3_console")
    result["who"] = who(cookie)
    result["cookie_attrs"] = r.headers.get("set-cookie", "")
    replay = requests.Session()
    replay.cookies.set("grids3_sso", pending)
    r = finish(replay, cb, a_bind)
    result["replay"] = [r.status_code, error_of(r)]

    # Signing in again in the same browser ends the session it had.
    before = attacker.cookies.get("grids3_console")
    bind = new_bind()
    r = finish(attacker, provider_login(attacker, "ann", bind), bind)
    result["again"] = r.status_code
    result["previous_after_again"] = who(before)[0]
    result["ann_cookie"] = attacker.cookies.get("grids3_console")

    # Mallory signs in at the provider, but no role trusts mallory.
    _, r = signed_in_session("mallory")
    result["mallory"] = [r.status_code, error_of(r)]
    # A second live session, for the caller's idle-expiry check.
    s2, _ = signed_in_session("ann")
    result["ann_cookie2"] = s2.cookies.get("grids3_console")


def browser(chromium):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = b.new_page()
        page.goto(console + "/login")
        page.click("#sso")
        for _ in range(6):
            page.wait_for_load_state("load")
            if page.url.startswith(console):
                break
            if page.query_selector("input[name=login]"):
                page.fill("input[name=login]", "ann")
                page.fill("input[name=password]", "any")
            page.click("button[type=submit]")
        page.wait_for_selector("#buckets")
        result["who"] = page.text_content(".who")
        result["buckets"] = page.eval_on_selector_all("#buckets a", "as => as.map(a => a.textContent.trim())")
        page.goto(console + "/browse?bucket=team-docs")
        page.wait_for_selector("#objects")
        result["objects"] = page.eval_on_selector_all("#objects a.key", "as => as.map(a => a.textContent.trim())")
        page.goto(console + "/browse?bucket=payroll")
        result["payroll"] = page.text_content("#error") if page.query_selector("#error") else page.content()[:300]
        page.goto(console + "/object?bucket=team-docs&key=readme.txt")
        page.wait_for_selector("#key")
        page.fill("#seconds", "600")
        page.click("text=Make a link")
        page.wait_for_selector("#share-url")
        link = page.input_value("#share-url")
        result["link_has_token"] = "X-Amz-Security-Token=" in link
        before = requests.get(link)
        result["link_before"] = [before.status_code, before.text]
        page.click("form.logout button[type=submit]")
        page.wait_for_selector("#sso")
        result["after_logout_url"] = page.url
        page.goto(console + "/")
        result["home_after_logout"] = page.url
        # The session's credentials ended with it: the link it made is refused.
        after = requests.get(link)
        result["link_after"] = [after.status_code, (re.search(r"<Code>([^<]*)<", after.text) or [None, ""])[1]]
        b.close()


def delete_role():
    s, r = signed_in_session("ann")
    result["signed_in"] = r.status_code
    result["home_before"] = s.get(console + "/", allow_redirects=False).status_code
    iam.delete_role_policy(RoleName="docs-reader", PolicyName="docs")
    iam.delete_role(RoleName="docs-reader")
    t0 = time.time()
    status = None
    # The stated bound is the credentials cache's 10 s; on this instance the IAM write ends
    # it at once.
    while time.time() - t0 < 15:
        r = s.get(console + "/", allow_redirects=False)
        status = [r.status_code, r.headers.get("location")]
        if r.status_code == 303:
            break
        time.sleep(0.5)
    result["home_after_delete"] = status
    result["ended_within_s"] = round(time.time() - t0, 1)


if mode == "setup":
    setup()
elif mode == "browser":
    browser(sys.argv[7])
elif mode == "http":
    http_checks()
elif mode == "delete":
    delete_role()
print("RESULT " + json.dumps(result))
