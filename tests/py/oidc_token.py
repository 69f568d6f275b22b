"""An ID token from the test OpenID provider (tests/js/oidc_provider.mjs), got as a person
would get one: the authorization code flow with PKCE through the provider's own login and
consent pages (driven with HTTP requests), then the code exchanged at the token endpoint.

Usage as a module: id_token(issuer, user, redirect_uri) -> str.
"""
import base64
import hashlib
import os
import re
import sys
import urllib.parse

import requests

CLIENT_ID = "grids3-test"
CLIENT_SECRET = "grids3-test-secret"


def _form(html):
    action = re.search(r'<form[^>]*action="([^"]+)"', html).group(1)
    fields = dict(re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', html))
    return action, fields


def through_login(s, r, user, redirect_uri):
    """From the provider's first page `r` (in session `s`), through its login (as `user`) and
    consent forms: the URL it sends the browser back to (starting with `redirect_uri`, not
    followed)."""
    for _ in range(6):
        if "name=\"login\"" in r.text:
            action, fields = _form(r.text)
            fields.update({"login": user, "password": "any"})
        elif "<form" in r.text:
            action, fields = _form(r.text)
        else:
            raise RuntimeError(f"unexpected page: {r.status_code} {r.text[:300]}")
        r = s.post(urllib.parse.urljoin(r.url, action), data=fields, allow_redirects=False)
        while r.status_code in (302, 303) and not r.headers["location"].startswith(redirect_uri):
            r = s.get(urllib.parse.urljoin(r.url, r.headers["location"]), allow_redirects=False)
        if r.status_code in (302, 303):
            return r.headers["location"]
    raise RuntimeError("the provider never sent the browser back")


def id_token(issuer, user, redirect_uri, nonce="n-0S6_WzA2Mj"):
    s = requests.Session()
    verifier = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    q = {"client_id": CLIENT_ID, "response_type": "code", "scope": "openid email", "redirect_uri": redirect_uri,
         "state": "st", "nonce": nonce, "code_challenge": challenge, "code_challenge_method": "S256"}
    r = s.get(f"{issuer}/auth?" + urllib.parse.urlencode(q), allow_redirects=True)
    back = through_login(s, r, user, redirect_uri)
    code = urllib.parse.parse_qs(urllib.parse.urlsplit(back).query)["code"][0]
    t = requests.post(f"{issuer}/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
        "code_verifier": verifier, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET})
    t.raise_for_status()
    return t.json()["id_token"]


if __name__ == "__main__":
    print(id_token(sys.argv[1], sys.argv[2], sys.argv[3]))
