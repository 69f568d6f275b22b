"""Helpers the Python checks share: a check that prints or exits, boto3 clients for an
endpoint (signed or UNSIGNED), the S3 error code of a call, and curl with its status."""
import os
import subprocess
import sys
import tempfile

import boto3
from botocore import UNSIGNED
from botocore.config import Config

tmp = tempfile.mkdtemp()


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")
    print(f"ok: {what}")


def client(endpoint, a, s, unsigned=False):
    cfg = {"signature_version": UNSIGNED} if unsigned else {}
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=a, aws_secret_access_key=s,
                        region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, **cfg))


def code(fn):
    """The S3 error code of a call ("OK" when it succeeds)."""
    try:
        fn()
    except Exception as e:  # botocore.exceptions.ClientError
        return e.response["Error"]["Code"]
    return "OK"


def curl(*args):
    """curl's status code and the body it received."""
    path = os.path.join(tmp, "body")
    if os.path.exists(path):
        os.remove(path)
    out = subprocess.run(["curl", "-s", "-o", path, "-w", "%{http_code}", *args], capture_output=True, text=True)
    body = open(path, "rb").read() if os.path.exists(path) else b""
    return int(out.stdout or 0), body
