"""Schemathesis against a running grids3, from openapi/grids3.yaml, with every request signed
with SigV4 by botocore's signer. Fails on any 5xx, and on any status code or content type the
document does not declare.

Usage: python schemathesis_run.py ENDPOINT ACCESS_KEY SECRET_KEY [MAX_EXAMPLES]
"""
import os
import sys
import urllib.parse

import requests
import schemathesis
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, status_code_conformance

endpoint, ak, sk = sys.argv[1:4]
max_examples = int(sys.argv[4]) if len(sys.argv) > 4 else 25
creds = Credentials(ak, sk)


class SigV4(requests.auth.AuthBase):
    """Signs the prepared request as an S3 client would (UNSIGNED-PAYLOAD is not used: the
    body's SHA-256 is signed, which grids3 verifies)."""

    def __call__(self, r):
        # requests encodes a space in the query as "+"; S3 clients send %20, and botocore signs
        # the query as sent, so normalise it first.
        parts = urllib.parse.urlsplit(r.url)
        if parts.query:
            pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
            query = "&".join(
                urllib.parse.quote(k, safe="-_.~") + "=" + urllib.parse.quote(v, safe="-_.~") for k, v in pairs
            )
            r.url = urllib.parse.urlunsplit(parts._replace(query=query))
        skip = {"authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"}
        headers = {k: v for k, v in r.headers.items() if k.lower() not in skip}
        body = r.body or b""
        if isinstance(body, str):
            body = body.encode()
        aws = AWSRequest(method=r.method, url=r.url, data=body, headers=headers)
        S3SigV4Auth(creds, "s3", "us-east-1").add_auth(aws)
        for k, v in aws.headers.items():
            r.headers[k] = v
        return r


session = requests.Session()
session.auth = SigV4()
here = os.path.dirname(os.path.abspath(__file__))
schema = schemathesis.openapi.from_path(os.path.join(here, "..", "..", "openapi", "grids3.yaml"))
schema.config.update(base_url=endpoint)
failures = []
count = 0
statuses = {}
for result in schema.get_all_operations():
    operation = result.ok()

    @given(case=operation.as_strategy())
    @settings(max_examples=max_examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), derandomize=True)
    def run(case):
        global count
        count += 1
        response = case.call(session=session)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        # The root key signs every request: a 403 means the signing (or grids3's check of it)
        # is wrong, which "4XX is documented" would otherwise hide.
        if response.status_code == 403:
            failures.append(f"{operation.verbose_name}: 403 {response.text[:300]}")
        try:
            case.validate_response(response, checks=(not_a_server_error, status_code_conformance,
                                                     content_type_conformance))
        except Exception as e:  # collect and report every failing operation
            failures.append(f"{operation.verbose_name}: {type(e).__name__}: {str(e)[:400]}")
            raise

    try:
        run()
    except Exception:
        pass
print(f"schemathesis: {count} requests over {len(list(schema.get_all_operations()))} operations; statuses {sorted(statuses.items())}")
if not any(200 <= code < 300 for code in statuses):
    failures.append("no request succeeded at all")
if failures:
    print("\n".join(sorted(set(failures))[:40]))
    sys.exit(f"schemathesis: {len(failures)} failing cases")
print("schemathesis: all checks passed")
