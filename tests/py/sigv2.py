"""Signature Version 2 against a running grids3: boto3 signing every request with SigV2
(signature_version="s3"), boto3's and awscli's default presigned URLs (SigV2 query strings)
fetched with plain HTTP, and the refusals (a wrong secret, an expired URL, a tampered one).

Usage: python sigv2.py ENDPOINT ACCESS_KEY SECRET_KEY [disabled]
With "disabled" (a gateway started with --disable-sigv2) it checks that SigV2 is refused and
SigV4 still works.
"""
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import boto3
from botocore.config import Config

endpoint, ak, sk = sys.argv[1:4]
disabled = len(sys.argv) > 4 and sys.argv[4] == "disabled"
bindir = os.path.dirname(sys.executable)


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")
    print(f"ok: {what}")


def fetch(url, method="GET", data=None, headers=None):
    req = urllib.request.Request(url, method=method, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def client(signature_version=None, secret=sk):
    cfg = Config(s3={"addressing_style": "path"}, signature_version=signature_version) \
        if signature_version else Config(s3={"addressing_style": "path"})
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak,
                        aws_secret_access_key=secret, region_name="us-east-1", config=cfg)


v4 = client("s3v4")
v4.create_bucket(Bucket="sigv2")
v4.put_object(Bucket="sigv2", Key="dir/ü space+plus.txt", Body=b"signed with v2?")
default = client()
url = default.generate_presigned_url(
    "get_object", Params={"Bucket": "sigv2", "Key": "dir/ü space+plus.txt"}, ExpiresIn=300)
check("AWSAccessKeyId=" in url and "Signature=" in url, f"boto3's default presigned URL is SigV2 ({url})")

if disabled:
    status, body = fetch(url)
    check(status == 400 and b"AWS4-HMAC-SHA256" in body, f"SigV2 refused when disabled ({status})")
    v2 = client("s3")
    try:
        v2.list_objects(Bucket="sigv2")
        check(False, "a SigV2-signed request is refused when disabled")
    except Exception as e:  # botocore raises ClientError
        check("InvalidRequest" in str(e), f"a SigV2-signed request is refused when disabled ({e})")
    check(v4.get_object(Bucket="sigv2", Key="dir/ü space+plus.txt")["Body"].read() == b"signed with v2?",
          "SigV4 still works")
    print("sigv2: all checks passed")
    sys.exit(0)

# Presigned URLs made by default (SigV2 query strings).
status, body = fetch(url)
check(status == 200 and body == b"signed with v2?", f"boto3 default presigned GET ({status} {body[:200]!r})")
status, body = fetch(url.replace("Signature=", "Signature=A"))
check(status == 403 and b"SignatureDoesNotMatch" in body, f"a tampered SigV2 URL is refused ({status})")
expired = default.generate_presigned_url(
    "get_object", Params={"Bucket": "sigv2", "Key": "dir/ü space+plus.txt"}, ExpiresIn=1)
time.sleep(2)
status, body = fetch(expired)
check(status == 403 and b"expired" in body, f"an expired SigV2 URL is refused ({status} {body[:200]!r})")
put_url = default.generate_presigned_url(
    "put_object", Params={"Bucket": "sigv2", "Key": "presigned-put.txt"}, ExpiresIn=300)
# (curl, with no Content-Type: the URL signed none, and SigV2 signs the Content-Type line.)
out = subprocess.run(["curl", "-sf", "-X", "PUT", "-H", "Content-Type:", "--data-binary",
                      "put via presigned v2", put_url], capture_output=True)
check(out.returncode == 0, f"boto3 default presigned PUT with curl ({out.returncode} {out.stdout[:200]!r})")
check(v4.get_object(Bucket="sigv2", Key="presigned-put.txt")["Body"].read() == b"put via presigned v2",
      "the presigned PUT landed")
# A response header override is a signed sub-resource.
url = default.generate_presigned_url(
    "get_object", Params={"Bucket": "sigv2", "Key": "presigned-put.txt",
                          "ResponseContentType": "text/x-test"}, ExpiresIn=300)
req = urllib.request.Request(url)
with urllib.request.urlopen(req) as r:
    check(r.headers["Content-Type"] == "text/x-test", "presigned GET with response-content-type")

# awscli 1.x presign (also SigV2 by default), fetched with curl.
env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk, AWS_DEFAULT_REGION="us-east-1")
env.pop("AWS_PROFILE", None)
out = subprocess.run([os.path.join(bindir, "aws"), "--endpoint-url", endpoint, "s3", "presign",
                      "s3://sigv2/dir/ü space+plus.txt"], env=env, capture_output=True, text=True)
check(out.returncode == 0, f"aws s3 presign ({out.stderr})")
presigned = out.stdout.strip()
out = subprocess.run(["curl", "-sf", presigned], capture_output=True)
check(out.returncode == 0 and out.stdout == b"signed with v2?", f"curl of the awscli presigned URL ({presigned})")

# Every request signed with SigV2 in the Authorization header.
v2 = client("s3")
v2.put_object(Bucket="sigv2", Key="v2/a b.txt", Body=b"v2 header", ContentType="text/plain",
              Metadata={"color": "blue"})
got = v2.get_object(Bucket="sigv2", Key="v2/a b.txt")
check(got["Body"].read() == b"v2 header" and got["Metadata"] == {"color": "blue"},
      "boto3 SigV2 PUT and GET with metadata")
keys = [o["Key"] for o in v2.list_objects(Bucket="sigv2", Prefix="v2/")["Contents"]]
check(keys == ["v2/a b.txt"], "boto3 SigV2 ListObjects")
v2.put_object_tagging(Bucket="sigv2", Key="v2/a b.txt",
                      Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
check(v2.get_object_tagging(Bucket="sigv2", Key="v2/a b.txt")["TagSet"] == [{"Key": "k", "Value": "v"}],
      "boto3 SigV2 tagging (a signed sub-resource)")
mp = v2.create_multipart_upload(Bucket="sigv2", Key="v2/mp")
part = v2.upload_part(Bucket="sigv2", Key="v2/mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"x" * 1000)
v2.complete_multipart_upload(Bucket="sigv2", Key="v2/mp", UploadId=mp["UploadId"],
                             MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
check(v2.head_object(Bucket="sigv2", Key="v2/mp")["ContentLength"] == 1000, "boto3 SigV2 multipart upload")
v2.delete_object(Bucket="sigv2", Key="v2/a b.txt")
# A SigV2 request that declares the body's SHA-256 gets it verified, as with SigV4.
from botocore.awsrequest import AWSRequest
from botocore.auth import HmacV1Auth
from botocore.credentials import Credentials
import hashlib
for declared, want in [(hashlib.sha256(b"declared").hexdigest(), 200), ("0" * 64, 400)]:
    req = AWSRequest(method="PUT", url=f"{endpoint}/sigv2/v2/declared", data=b"declared",
                     headers={"x-amz-content-sha256": declared, "Content-Type": "application/octet-stream"})
    HmacV1Auth(Credentials(ak, sk)).add_auth(req)
    p = req.prepare()
    r = urllib.request.Request(p.url, data=p.body, method="PUT", headers=dict(p.headers))
    try:
        status = urllib.request.urlopen(r).status
    except urllib.error.HTTPError as e:
        status = e.code
    check(status == want, f"SigV2 PUT with x-amz-content-sha256 {'right' if want == 200 else 'wrong'}: {status}")
bad = client("s3", secret="not-the-secret")
try:
    bad.list_objects(Bucket="sigv2")
    check(False, "a wrong secret is refused")
except Exception as e:
    check("SignatureDoesNotMatch" in str(e), "a wrong secret is refused with SignatureDoesNotMatch")
print("sigv2: all checks passed")
