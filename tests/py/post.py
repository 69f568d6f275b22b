"""POST Object (browser form uploads) against a running grids3, with the policies and form
fields boto3's generate_presigned_post makes (SigV4 and SigV2), posted with curl -F.

Usage: python post.py ENDPOINT ACCESS_KEY SECRET_KEY
"""
import base64
import json
import os
import subprocess
import sys
import tempfile

import boto3
from botocore.config import Config

endpoint, ak, sk = sys.argv[1:4]
tmp = tempfile.mkdtemp()


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")
    print(f"ok: {what}")


def client(sv):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1", config=Config(signature_version=sv, s3={"addressing_style": "path"}))


def post(url, fields, content=b"form upload", filename="photo.jpg", extra=()):
    path = os.path.join(tmp, filename)
    with open(path, "wb") as f:
        f.write(content)
    args = ["curl", "-s", "-o", os.path.join(tmp, "out"), "-D", os.path.join(tmp, "head"), "-w", "%{http_code}"]
    for k, v in list(fields.items()) + list(extra):
        args += ["--form-string", f"{k}={v}"]
    args += ["-F", f"file=@{path};filename={filename}", url]
    out = subprocess.run(args, capture_output=True, text=True)
    body = open(os.path.join(tmp, "out"), "rb").read()
    head = open(os.path.join(tmp, "head")).read()
    return int(out.stdout or 0), body, head


v4 = client("s3v4")
v4.create_bucket(Bucket="forms", ObjectOwnership="ObjectWriter")

# SigV4: boto3's presigned POST with a size range and a key prefix.
p = v4.generate_presigned_post("forms", "uploads/${filename}",
                               Conditions=[["starts-with", "$key", "uploads/"], ["content-length-range", 1, 1000]],
                               ExpiresIn=300)
check("x-amz-signature" in p["fields"], "boto3 presigned POST (SigV4) fields")
status, body, head = post(p["url"], p["fields"], b"hello form")
check(status == 204, f"SigV4 form upload answered 204 ({status} {body[:300]!r})")
got = v4.get_object(Bucket="forms", Key="uploads/photo.jpg")["Body"].read()
check(got == b"hello form", "${filename} substituted and the object stored")

status, body, _ = post(p["url"], p["fields"], b"x" * 1001)
check(status == 400 and b"EntityTooLarge" in body, f"content-length-range upper bound ({status})")
status, body, _ = post(p["url"], p["fields"], b"", filename="empty.bin")
check(status == 400 and b"EntityTooSmall" in body, f"content-length-range lower bound ({status})")
try:
    v4.head_object(Bucket="forms", Key="uploads/empty.bin")
    check(False, "a refused upload leaves no object")
except Exception:
    check(True, "a refused upload leaves no object")

tampered = dict(p["fields"], **{"x-amz-signature": "0" * 64})
status, body, _ = post(p["url"], tampered)
check(status == 403 and b"SignatureDoesNotMatch" in body, f"a wrong signature is refused ({status})")
status, body, _ = post(p["url"], p["fields"], extra=[("x-amz-meta-extra", "1")])
check(status == 403 and b"Extra input fields" in body, f"a field no condition covers is refused ({status} {body[:200]!r})")
bad_key = dict(p["fields"], key="elsewhere/x")
status, body, _ = post(p["url"], bad_key)
check(status == 403 and b"Policy Condition failed" in body, f"a key outside the policy is refused ({status})")
expired = v4.generate_presigned_post("forms", "late.txt", ExpiresIn=-10)
status, body, _ = post(expired["url"], expired["fields"])
check(status == 403 and b"expired" in body, f"an expired policy is refused ({status} {body[:200]!r})")
status, body, _ = post(p["url"], {k: v for k, v in p["fields"].items() if k != "policy"})
check(status == 403, f"a form without a policy is refused ({status})")

# success_action_status 201 with metadata and Content-Type.
p = v4.generate_presigned_post("forms", "meta.txt",
                               Fields={"success_action_status": "201", "Content-Type": "text/plain",
                                       "x-amz-meta-color": "blue"},
                               Conditions=[{"success_action_status": "201"}, {"Content-Type": "text/plain"},
                                           {"x-amz-meta-color": "blue"}],
                               ExpiresIn=300)
status, body, head = post(p["url"], p["fields"], b"with meta")
check(status == 201 and b"<PostResponse>" in body and b"<Key>meta.txt</Key>" in body,
      f"success_action_status 201 answers PostResponse ({status} {body[:300]!r})")
h = v4.head_object(Bucket="forms", Key="meta.txt")
check(h["ContentType"] == "text/plain" and h["Metadata"] == {"color": "blue"}, "Content-Type and x-amz-meta-* fields stored")

# x-amz-website-redirect-location: stored for the website endpoint, returned by HEAD, and a
# value that is neither a path nor an http(s) URL refused as AWS refuses it.
p = v4.generate_presigned_post("forms", "moved.html", Fields={"x-amz-website-redirect-location": "/new.html"},
                               Conditions=[{"x-amz-website-redirect-location": "/new.html"}], ExpiresIn=300)
status, body, _ = post(p["url"], p["fields"])
check(status == 204, f"a form with x-amz-website-redirect-location ({status} {body[:200]!r})")
check(v4.head_object(Bucket="forms", Key="moved.html").get("WebsiteRedirectLocation") == "/new.html",
      "the form's website redirect is stored")
p = v4.generate_presigned_post("forms", "bad.html", Fields={"x-amz-website-redirect-location": "new.html"},
                               Conditions=[{"x-amz-website-redirect-location": "new.html"}], ExpiresIn=300)
status, body, _ = post(p["url"], p["fields"])
check(status == 400 and b"InvalidRedirectLocation" in body, f"a bad website redirect in a form is refused ({status})")

# success_action_redirect.
p = v4.generate_presigned_post("forms", "redirect.txt",
                               Fields={"success_action_redirect": "http://example.test/done"},
                               Conditions=[{"success_action_redirect": "http://example.test/done"}], ExpiresIn=300)
status, body, head = post(p["url"], p["fields"])
check(status == 303 and "location: http://example.test/done?bucket=forms&key=redirect.txt&etag=" in head.lower(),
      f"success_action_redirect answers 303 ({status} {head!r})")

# SigV2: the policy signed with HMAC-SHA1.
p = client("s3").generate_presigned_post("forms", "v2.txt", ExpiresIn=300)
check("signature" in p["fields"] and "AWSAccessKeyId" in p["fields"], "boto3 presigned POST (SigV2) fields")
status, body, _ = post(p["url"], p["fields"], b"v2 form")
check(status == 204, f"SigV2 form upload ({status} {body[:300]!r})")
check(v4.get_object(Bucket="forms", Key="v2.txt")["Body"].read() == b"v2 form", "SigV2 form object stored")

# The form's acl field is honoured: public-read opens the object to unsigned GETs.
p = v4.generate_presigned_post("forms", "pub.txt", Fields={"acl": "public-read"},
                               Conditions=[{"acl": "public-read"}], ExpiresIn=300)
status, body, _ = post(p["url"], p["fields"], b"public via form")
check(status == 204, f"acl=public-read in a form ({status} {body[:200]!r})")
out = subprocess.run(["curl", "-s", f"{endpoint}/forms/pub.txt"], capture_output=True)
check(out.stdout == b"public via form", "plain curl reads the public object")
p = v4.generate_presigned_post("forms", "exec.txt", Fields={"acl": "aws-exec-read"},
                               Conditions=[{"acl": "aws-exec-read"}], ExpiresIn=300)
status, body, _ = post(p["url"], p["fields"])
check(status == 501, f"an ACL grids3 does not have is refused with 501 ({status})")
# Issue 28 item 7: the tagging field is the object's tag set (it answered 501).
tagging = "<Tagging><TagSet><Tag><Key>team</Key><Value>blue</Value></Tag><Tag><Key>x</Key><Value></Value></Tag></TagSet></Tagging>"
p = v4.generate_presigned_post("forms", "tagged.txt", Fields={"tagging": tagging},
                               Conditions=[{"tagging": tagging}], ExpiresIn=300)
status, body, _ = post(p["url"], p["fields"])
check(status == 204, f"a tagging field is taken ({status} {body[:200]!r})")
tags = v4.get_object_tagging(Bucket="forms", Key="tagged.txt")["TagSet"]
check(tags == [{"Key": "team", "Value": "blue"}, {"Key": "x", "Value": ""}], f"the form's tags are stored, in order ({tags})")
p = v4.generate_presigned_post("forms", "badtags.txt", Fields={"tagging": "<Tagging><TagSet><Tag><Key>k</Key></Tag><Oops/></TagSet></Tagging>"},
                               Conditions=[["starts-with", "$tagging", ""]], ExpiresIn=300)
status, body, _ = post(p["url"], p["fields"])
check(status == 400 and b"MalformedXML" in body, f"a malformed tagging field is 400 MalformedXML ({status})")

# ${filename} in the key: the policy's conditions hold for the key as stored.
p = v4.generate_presigned_post("forms", "${filename}", Conditions=[["starts-with", "$key", "foo"]], ExpiresIn=300)
status, body, _ = post(p["url"], p["fields"], b"bar", filename="foo.txt")
check(status == 204, f"a condition on $key is checked against the substituted key ({status} {body[:200]!r})")
check(v4.get_object(Bucket="forms", Key="foo.txt")["Body"].read() == b"bar", "${filename} gave foo.txt")

# Checksum fields: verified, stored and returned; a wrong one is BadDigest and stores nothing.
import zlib
good = base64.b64encode(zlib.crc32(b"summed").to_bytes(4, "big")).decode()
p = v4.generate_presigned_post("forms", "summed.txt", Fields={"x-amz-checksum-crc32": good},
                               Conditions=[{"x-amz-checksum-crc32": good}], ExpiresIn=300)
status, body, _ = post(p["url"], p["fields"], b"summed")
check(status == 204, f"a checksum field that matches ({status} {body[:200]!r})")
h = v4.head_object(Bucket="forms", Key="summed.txt", ChecksumMode="ENABLED")
check(h.get("ChecksumCRC32") == good, f"the form's checksum is stored and returned ({h.get('ChecksumCRC32')})")
bad = base64.b64encode(zlib.crc32(b"other").to_bytes(4, "big")).decode()
p = v4.generate_presigned_post("forms", "badsum.txt", Fields={"x-amz-checksum-crc32": bad},
                               Conditions=[{"x-amz-checksum-crc32": bad}], ExpiresIn=300)
status, body, _ = post(p["url"], p["fields"], b"summed")
check(status == 400 and b"BadDigest" in body, f"a checksum field that does not match is BadDigest ({status})")
try:
    v4.head_object(Bucket="forms", Key="badsum.txt")
    check(False, "nothing stored under a wrong checksum")
except v4.exceptions.ClientError:
    check(True, "nothing stored under a wrong checksum")

# 400s: a malformed x-amz-date, a policy without its signature, empty conditions.
p = v4.generate_presigned_post("forms", "d.txt", ExpiresIn=300)
fields = dict(p["fields"])
fields["x-amz-date"] = "Tue, 21 Feb 2023 12:00:00 GMT"
status, body, _ = post(p["url"], fields)
check(status == 400, f"a malformed x-amz-date is 400 ({status} {body[:200]!r})")
fields = dict(p["fields"])
del fields["x-amz-signature"]
status, body, _ = post(p["url"], fields)
check(status == 400 and b"x-amz-signature" in body, f"a policy without its signature is 400 ({status} {body[:200]!r})")
v2 = client("s3")
p2 = v2.generate_presigned_post("forms", "v2sig.txt", ExpiresIn=300)
fields = dict(p2["fields"])
del fields["signature"]
status, body, _ = post(p2["url"], fields)
check(status == 400, f"a SigV2 policy without its signature is 400 ({status} {body[:200]!r})")
import hashlib
import hmac


def sign_v4(policy_b64, credential):
    _, day, region, service, _ = credential.split("/")
    key = ("AWS4" + sk).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, policy_b64.encode(), hashlib.sha256).hexdigest()


for conds in ([], [{}]):
    doc = base64.b64encode(json.dumps({"expiration": "2099-01-01T00:00:00Z", "conditions": conds}).encode()).decode()
    fields = dict(p["fields"])
    fields["policy"] = doc
    fields["x-amz-signature"] = sign_v4(doc, fields["x-amz-credential"])
    status, body, _ = post(p["url"], fields)
    check(status == 400, f"conditions {conds} are 400 ({status} {body[:200]!r})")
print("post: all checks passed")
