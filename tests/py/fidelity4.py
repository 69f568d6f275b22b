"""Issue 40, items 1 to 5: S3 behaviours as AWS documents them, through boto3, against a
running grids3 (a second key for ownership and cross-key answers).

Usage: python fidelity4.py ENDPOINT ACCESS_KEY SECRET_KEY SECOND_ACCESS_KEY SECOND_SECRET_KEY
"""
import base64
import datetime
import json
import sys

import requests

from s3check import check, client as make_client, code

endpoint, ak, sk, ak2, sk2 = sys.argv[1:6]
s3 = make_client(endpoint, ak, sk)
other = make_client(endpoint, ak2, sk2)
anon = make_client(endpoint, "", "", unsigned=True)


def status(fn):
    """The error code and HTTP status of a call ("OK" and its status when it succeeds)."""
    try:
        r = fn()
        return "OK", r["ResponseMetadata"]["HTTPStatusCode"]
    except Exception as e:  # botocore.exceptions.ClientError
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]


# 1. Conditional deletes: x-amz-if-match-size and -last-modified-time, and DeleteObjects
#    entry conditions, each a 412 (per entry) when it does not hold.
B = "fid4-cond"
s3.create_bucket(Bucket=B)
s3.put_object(Bucket=B, Key="k", Body=b"hello")
h = s3.head_object(Bucket=B, Key="k")
check(status(lambda: s3.delete_object(Bucket=B, Key="k", IfMatchSize=6)) == ("PreconditionFailed", 412),
      "DeleteObject with a wrong x-amz-if-match-size: 412")
wrong_time = h["LastModified"] - datetime.timedelta(seconds=5)
check(status(lambda: s3.delete_object(Bucket=B, Key="k", IfMatchLastModifiedTime=wrong_time)) == ("PreconditionFailed", 412),
      "DeleteObject with a wrong x-amz-if-match-last-modified-time: 412")
check(code(lambda: s3.head_object(Bucket=B, Key="k")) == "OK", "and the object is still there")
r = s3.delete_objects(Bucket=B, Delete={"Objects": [
    {"Key": "k", "ETag": '"0123456789abcdef0123456789abcdef"'},
    {"Key": "k", "Size": 6},
    {"Key": "k", "LastModifiedTime": wrong_time}]})
errors = r.get("Errors", [])
check(len(errors) == 3 and all(e["Code"] == "PreconditionFailed" for e in errors) and not r.get("Deleted"),
      f"DeleteObjects: each entry whose ETag, Size or LastModifiedTime does not hold is a PreconditionFailed entry ({errors})")
check(code(lambda: s3.head_object(Bucket=B, Key="k")) == "OK", "and the object is still there")
r = s3.delete_objects(Bucket=B, Delete={"Objects": [
    {"Key": "k", "ETag": h["ETag"], "Size": 5, "LastModifiedTime": h["LastModified"]}]})
check([d["Key"] for d in r.get("Deleted", [])] == ["k"] and not r.get("Errors"), "and one whose conditions hold is deleted")
check(code(lambda: s3.head_object(Bucket=B, Key="k")) == "404", "it is gone")
check(status(lambda: s3.delete_object(Bucket=B, Key="missing", IfMatch='"abc"')) == ("NoSuchKey", 404),
      "If-Match on a missing key: 404 NoSuchKey, as AWS answers")

# 2. Policy conditions and status.
P = "fid4-policy"
s3.create_bucket(Bucket=P, ObjectOwnership="ObjectWriter")
for op in ["ArnLike", "ArnNotLike", "ArnEquals", "ArnNotEquals"]:
    doc = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
           "Resource": f"arn:aws:s3:::{P}/*", "Condition": {op: {"aws:SourceArn": "arn:aws:s3:::src-*"}}}]}
    check(code(lambda: s3.put_bucket_policy(Bucket=P, Policy=json.dumps(doc))) == "OK", f"a policy with {op} is taken")
root_doc = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
            "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{P}/*"}]}
check(code(lambda: s3.put_bucket_policy(Bucket=P, Policy=json.dumps(root_doc))) == "OK",
      "a principal arn:aws:iam::<account>:root is taken")
s3.delete_bucket_policy(Bucket=P)
# AWS's documented log-delivery policy, with aws:SourceArn under ArnLike.
L = "fid4-logs"
s3.create_bucket(Bucket=L)
def delivery(source_arn):
    return json.dumps({"Version": "2012-10-17", "Statement": [{"Sid": "S3ServerAccessLogsPolicy", "Effect": "Allow",
        "Principal": {"Service": "logging.s3.amazonaws.com"}, "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{L}/logs/*",
        "Condition": {"ArnLike": {"aws:SourceArn": source_arn}, "StringEquals": {"aws:SourceAccount": "000000000000"}}}]})
s3.put_bucket_policy(Bucket=L, Policy=delivery("arn:aws:s3:::not-this-one"))
logging_on = lambda: s3.put_bucket_logging(Bucket=P, BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": L, "TargetPrefix": "logs/"}})
check(code(logging_on) == "InvalidTargetBucketForLogging", "a delivery policy for another source bucket does not allow it")
s3.put_bucket_policy(Bucket=L, Policy=delivery(f"arn:aws:s3:::{P[:4]}*"))
check(code(logging_on) == "OK", "AWS's log-delivery policy (ArnLike aws:SourceArn, aws:SourceAccount) allows it")
check(status(lambda: s3.get_bucket_policy_status(Bucket=P)) == ("NoSuchBucketPolicy", 404),
      "GetBucketPolicyStatus of a private bucket without a policy: NoSuchBucketPolicy")
for acl in ["public-read", "authenticated-read"]:
    s3.put_bucket_acl(Bucket=P, ACL=acl)
    r = s3.get_bucket_policy_status(Bucket=P)
    check(r["PolicyStatus"]["IsPublic"] is True, f"a bucket whose ACL is {acl} is public by GetBucketPolicyStatus")
s3.put_bucket_acl(Bucket=P, ACL="private")

# 3. Checksums: ChecksumType, BadDigest against InvalidRequest, POST with a checksum field.
C = "fid4-sums"
s3.create_bucket(Bucket=C)
s3.put_object(Bucket=C, Key="one", Body=b"hello", ChecksumAlgorithm="CRC32")
for name, fn in [("HEAD", s3.head_object), ("GET", s3.get_object)]:
    r = fn(Bucket=C, Key="one", ChecksumMode="ENABLED")
    check(r.get("ChecksumType") == "FULL_OBJECT" and r.get("ChecksumCRC32"), f"{name} with checksum mode: ChecksumType FULL_OBJECT")
up = s3.create_multipart_upload(Bucket=C, Key="mp", ChecksumAlgorithm="CRC32")
p = s3.upload_part(Bucket=C, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 10, ChecksumAlgorithm="CRC32")
r = s3.complete_multipart_upload(Bucket=C, Key="mp", UploadId=up["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"], "ChecksumCRC32": p["ChecksumCRC32"]}]})
check(r.get("ChecksumType") == "COMPOSITE", f"CompleteMultipartUpload: ChecksumType COMPOSITE ({r.get('ChecksumType')})")
r = s3.head_object(Bucket=C, Key="mp", ChecksumMode="ENABLED")
check(r.get("ChecksumType") == "COMPOSITE", "and HEAD says so too")
check(status(lambda: s3.put_object(Bucket=C, Key="x", Body=b"hello", ChecksumCRC32="!!notbase64")) == ("InvalidRequest", 400),
      "a malformed x-amz-checksum-crc32: 400 InvalidRequest")
check(status(lambda: s3.put_object(Bucket=C, Key="x", Body=b"hello", ChecksumCRC32=base64.b64encode(b"abc").decode())) == ("InvalidRequest", 400),
      "one of the wrong length: 400 InvalidRequest")
check(status(lambda: s3.put_object(Bucket=C, Key="x", Body=b"hello", ChecksumCRC32=base64.b64encode(b"abcd").decode())) == ("BadDigest", 400),
      "a well-formed one that does not match: 400 BadDigest")
post = s3.generate_presigned_post(C, "posted", Fields={"x-amz-checksum-crc32": "NhCmhg=="},
                                  Conditions=[{"x-amz-checksum-crc32": "NhCmhg=="}])
r = requests.post(post["url"], data=post["fields"], files={"file": ("f", b"hello")})
check(r.status_code == 204, f"POST Object with a checksum field: 204 ({r.status_code} {r.text[:200]})")
h = s3.head_object(Bucket=C, Key="posted", ChecksumMode="ENABLED")
check(h.get("ChecksumCRC32") == "NhCmhg==", "and the object keeps it")
post = s3.generate_presigned_post(C, "posted-bad", Fields={"x-amz-checksum-crc32": "AAAAAA=="},
                                  Conditions=[{"x-amz-checksum-crc32": "AAAAAA=="}])
r = requests.post(post["url"], data=post["fields"], files={"file": ("f", b"hello")})
check(r.status_code == 400 and "BadDigest" in r.text, "one that does not match: 400 BadDigest")

# 4. Ownership: ListParts and ListMultipartUploads name the object's owner and the initiator.
allow_other = lambda b: json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
    "Principal": {"AWS": ak2}, "Action": "s3:*", "Resource": [f"arn:aws:s3:::{b}", f"arn:aws:s3:::{b}/*"]}]})
for ownership, acl, owner in [("BucketOwnerEnforced", None, ak), ("BucketOwnerPreferred", "bucket-owner-full-control", ak),
                              ("BucketOwnerPreferred", None, ak2), ("ObjectWriter", None, ak2)]:
    b = f"fid4-own-{ownership.lower()}"
    if code(lambda: s3.head_bucket(Bucket=b)) != "OK":
        s3.create_bucket(Bucket=b, ObjectOwnership=ownership)
        s3.put_bucket_policy(Bucket=b, Policy=allow_other(b))
    kw = {"ACL": acl} if acl else {}
    up = other.create_multipart_upload(Bucket=b, Key=f"by-other-{acl}", **kw)
    r = s3.list_parts(Bucket=b, Key=f"by-other-{acl}", UploadId=up["UploadId"])
    got = (r["Owner"]["DisplayName"], r["Initiator"]["DisplayName"])
    check(got == (owner, ak2), f"ListParts under {ownership} {acl or ''}: Owner {owner}, Initiator the writer ({got})")
    u = [u for u in s3.list_multipart_uploads(Bucket=b)["Uploads"] if u["UploadId"] == up["UploadId"]][0]
    got = (u["Owner"]["DisplayName"], u["Initiator"]["DisplayName"])
    check(got == (owner, ak2), f"ListMultipartUploads the same ({got})")
    s3.abort_multipart_upload(Bucket=b, Key=f"by-other-{acl}", UploadId=up["UploadId"])

# 4b. A bucket policy grants bucket operations to another key as AWS grants them to another
#     account; the policy operations answer 405, and an unsigned request still gets 403.
W = "fid4-writer"
s3.create_bucket(Bucket=W, ObjectOwnership="ObjectWriter")
s3.put_bucket_policy(Bucket=W, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
    "Principal": {"AWS": "*"}, "Action": "*", "Resource": [f"arn:aws:s3:::{W}", f"arn:aws:s3:::{W}/*"]}]}))
check(status(lambda: other.put_bucket_acl(Bucket=W, ACL="private")) == ("OK", 200),
      "another key that the policy allows may PutBucketAcl (it got 403)")
check(status(lambda: other.put_bucket_tagging(Bucket=W, Tagging={"TagSet": [{"Key": "a", "Value": "b"}]}))[0] == "OK",
      "and PutBucketTagging")
check(status(lambda: other.get_bucket_policy(Bucket=W)) == ("MethodNotAllowed", 405),
      "GetBucketPolicy by another key: 405 MethodNotAllowed, as AWS answers another account")
check(status(lambda: anon.put_bucket_acl(Bucket=W, ACL="public-read-write")) == ("AccessDenied", 403),
      "an unsigned PutBucketAcl: 403 whatever the policy says")
check(status(lambda: anon.delete_bucket(Bucket=W)) == ("AccessDenied", 403), "an unsigned DeleteBucket: 403")
# RestrictPublicBuckets blocks the cross-account access a public policy gives (AWS), so
# another key gets no bucket configuration from this policy then.
s3.put_public_access_block(Bucket=W, PublicAccessBlockConfiguration={"RestrictPublicBuckets": True})
check(status(lambda: other.put_bucket_tagging(Bucket=W, Tagging={"TagSet": [{"Key": "c", "Value": "d"}]})) == ("AccessDenied", 403),
      "with RestrictPublicBuckets, a public policy grants another key no bucket configuration")
check(status(lambda: other.delete_public_access_block(Bucket=W)) == ("AccessDenied", 403), "nor the removal of the block")
check(status(lambda: other.put_object(Bucket=W, Key="x", Body=b"x")) == ("OK", 200),
      "objects stay open to the keys of grids3's one account, whom AWS still lets in")
s3.delete_public_access_block(Bucket=W)

# 5. Smaller: public-read-write object ACL, suspended versioning, partNumber beyond the parts.
S = "fid4-small"
s3.create_bucket(Bucket=S, ObjectOwnership="ObjectWriter")
s3.put_object(Bucket=S, Key="o", Body=b"x", ACL="public-read-write")
g = s3.get_object_acl(Bucket=S, Key="o")["Grants"]
got = sorted((x["Grantee"].get("URI", x["Grantee"].get("ID", ""))[-8:], x["Permission"]) for x in g)
check(len(g) == 3 and ("AllUsers", "WRITE") in got and ("AllUsers", "READ") in got
      and any(p == "FULL_CONTROL" for _, p in got), f"a public-read-write object ACL lists 3 grants ({got})")
s3.put_object_acl(Bucket=S, Key="o", AccessControlPolicy={"Owner": s3.get_object_acl(Bucket=S, Key="o")["Owner"], "Grants": g})
check(len(s3.get_object_acl(Bucket=S, Key="o")["Grants"]) == 3, "and a read-modify-write of it is taken back as it was")
V = "fid4-suspended"
s3.create_bucket(Bucket=V)
s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Enabled"})
s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Suspended"})
r = s3.put_object(Bucket=V, Key="p", Body=b"x")
check("VersionId" not in r, f"PutObject in a suspended bucket answers no VersionId ({r.get('VersionId')})")
up = s3.create_multipart_upload(Bucket=V, Key="m")
p = s3.upload_part(Bucket=V, Key="m", UploadId=up["UploadId"], PartNumber=1, Body=b"y")
r = s3.complete_multipart_upload(Bucket=V, Key="m", UploadId=up["UploadId"], MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
check("VersionId" not in r, "nor does CompleteMultipartUpload")
check(s3.head_object(Bucket=V, Key="p").get("VersionId") == "null", "HEAD still names the null version")
check(status(lambda: s3.get_object(Bucket=V, Key="m", PartNumber=3)) == ("InvalidPartNumber", 416),
      "GET ?partNumber= beyond the part count: 416 InvalidPartNumber")

# Other answers checked against AWS's documentation.
import socket
from botocore.awsrequest import AWSRequest
from botocore.auth import SigV4Auth
from botocore.credentials import Credentials
def signed(method, path, body=b"", headers=None):
    headers = dict(headers or {})
    # SigV4 with a body needs its hash (botocore's plain SigV4Auth does not add it).
    headers.setdefault("x-amz-content-sha256", __import__("hashlib").sha256(body).hexdigest())
    req = AWSRequest(method=method, url=f"{endpoint}{path}", data=body, headers=headers)
    SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
    return req
req = signed("PUT", f"/{S}/no-length", headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
host, port = endpoint.split("//")[1].split(":")
with socket.create_connection((host, int(port))) as conn:
    head = f"PUT /{S}/no-length HTTP/1.1\r\nHost: {req.headers['host'] if 'host' in req.headers else host + ':' + port}\r\n"
    for k, v in req.headers.items():
        if k.lower() != "host":
            head += f"{k}: {v}\r\n"
    conn.sendall((head + "Connection: close\r\n\r\n").encode())
    answer = b""
    while chunk := conn.recv(65536):
        answer += chunk
check(answer.startswith(b"HTTP/1.1 411") and b"MissingContentLength" in answer,
      f"a PUT with neither Content-Length nor chunked transfer: 411 MissingContentLength ({answer[:40]!r})")
check(code(lambda: s3.head_object(Bucket=S, Key="no-length")) == "404", "and no empty object is stored")
check(status(lambda: s3.put_object(Bucket=S, Key="meta", Body=b"x", Metadata={"big": "x" * 2100})) == ("MetadataTooLarge", 400),
      "user metadata over 2 KB: 400 MetadataTooLarge")
check(status(lambda: s3.put_object(Bucket=S, Key="meta", Body=b"x", Metadata={"ok": "x" * 2000})) == ("OK", 200),
      "and 2,000 bytes are taken")
import boto3
tokened = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                       aws_session_token="FwoGZXIvYXdzEXAMPLE", region_name="us-east-1")
check(status(lambda: tokened.list_objects_v2(Bucket=S)) == ("InvalidToken", 400),
      "a request with a session token grids3 never issued: 400 InvalidToken")
post = tokened.generate_presigned_post(S, "tokened")
r = requests.post(post["url"], data=post["fields"], files={"file": ("f", b"x")})
check(r.status_code == 400 and "InvalidToken" in r.text, f"a POST form with a session token: 400 InvalidToken ({r.status_code})")
r = requests.get(f"{endpoint}/{S}", headers={"Authorization": "Basic dXNlcjpwYXNz"})
check(r.status_code == 400 and "<Code>InvalidArgument</Code>" in r.text and "Unsupported Authorization Type" in r.text,
      f"Authorization: Basic: 400 InvalidArgument, Unsupported Authorization Type ({r.status_code})")
req = signed("GET", f"/{S}")
h = dict(req.headers)
h["X-Amz-Date"] = "20200101T000000Z"
r = requests.get(req.url, headers=h)
check(r.status_code == 400 and "AuthorizationHeaderMalformed" in r.text and "Invalid credential date" in r.text,
      f"a credential date other than X-Amz-Date's day: 400 AuthorizationHeaderMalformed ({r.status_code})")
req = signed("GET", f"/{S}?uploads&encoding-type=bogus")
r = requests.get(req.url, headers=dict(req.headers))
check(r.status_code == 400 and "InvalidArgument" in r.text, f"ListMultipartUploads encoding-type=bogus: 400 ({r.status_code})")
s3.create_multipart_upload(Bucket=S, Key="a key+with&odd")
req = signed("GET", f"/{S}?uploads&encoding-type=url")
r = requests.get(req.url, headers=dict(req.headers))
check("<Key>a%20key%2Bwith%26odd</Key>" in r.text and "<EncodingType>url</EncodingType>" in r.text,
      "and encoding-type=url encodes the keys")

print("fidelity4: all checks passed")
