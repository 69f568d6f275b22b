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
http: the same flow over HTTP: a callback this browser did not begin, a replayed callback and
mallory (whom no role admits) get nothing; ann's session cookie is printed for the caller.
delete: ann signs in, the role is deleted, the session ends.
Prints `RESULT {...}`.
"""
import json
import re
import sys
import time

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


def provider_login(s, user):
    """Starts a console sign-in in session `s` and goes through the provider's pages as
    `user`: the callback URL the provider sends the browser back to (not yet followed)."""
    r = s.get(console + "/login/sso", allow_redirects=False)
    assert r.status_code == 303, (r.status_code, r.text[:300])
    r = s.get(r.headers["location"], allow_redirects=True)
    return through_login(s, r, user, console)


def signed_in_session(user):
    s = requests.Session()
    cb = provider_login(s, user)
    r = s.get(cb, allow_redirects=False)
    return s, cb, r


def http_checks():
    r = requests.get(console + "/login")
    result["button"] = re.search(r'id="sso"[^>]*>([^<]*)<', r.text).group(1)

    # A callback this browser did not begin: no pending cookie, or another sign-in's state.
    r = requests.get(console + "/login/sso/callback?code=abc&state=xyz", allow_redirects=False)
    result["no_cookie"] = r.status_code
    victim = requests.Session()
    victim.get(console + "/login/sso", allow_redirects=False)
    attacker = requests.Session()
    cb = provider_login(attacker, "ann")
    r = victim.get(cb, allow_redirects=False)
    result["foreign_state"] = r.status_code
    result["foreign_session"] = victim.cookies.get("grids3_console")

    # The attacker's own callback works once; replayed with the same pending cookie, the code
    # is spent at the provider.
    pending = attacker.cookies.get("grids3_sso")
    r = attacker.get(cb, allow_redirects=False)
    result["own_callback"] = r.status_code
    m = re.search(r'id="signed-in">Signed in as (.*?)\. <a', r.text)
    result["who"] = m.group(1) if m else r.text[:300]
    result["cookie_attrs"] = r.headers.get("set-cookie", "")
    cookie = attacker.cookies.get("grids3_console")
    home = requests.get(console + "/", cookies={"grids3_console": cookie}, allow_redirects=False)
    result["home"] = home.status_code
    replay = requests.get(cb, cookies={"grids3_sso": pending}, allow_redirects=False)
    result["replay"] = replay.status_code
    result["replay_error"] = (re.search(r'id="error">([^<]*)<', replay.text) or [None, ""])[1] if replay.status_code != 200 else ""

    # Mallory signs in at the provider, but no role trusts mallory.
    _, _, r = signed_in_session("mallory")
    result["mallory"] = r.status_code
    result["mallory_error"] = (re.search(r'id="error">([^<]*)<', r.text) or [None, ""])[1]
    result["ann_cookie"] = cookie


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
    s, _, r = signed_in_session("ann")
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
