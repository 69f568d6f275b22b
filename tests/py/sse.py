"""Server-side encryption (SSE-C, SSE-S3, SSE-KMS) as AWS documents it, against a running
grids3 with a master key, with boto3; and what PyMongo sees in the database: ciphertext only,
and a tampered chunk fails the read instead of returning wrong bytes.

Usage: python sse.py ENDPOINT ACCESS_KEY SECRET_KEY MONGODB_URI DATABASE KMS_KEY DISABLED_KMS_KEY
"""
import base64
import hashlib
import itertools
import json
import os
import sys

import re

import gridfs
import pymongo
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from s3check import check, client as make_client

endpoint, ak, sk, uri, dbname, kms_key, disabled_key = sys.argv[1:8]
s3 = make_client(endpoint, ak, sk)
db = pymongo.MongoClient(uri)[dbname]

MARK = b"PLAINTEXT-MARKER-"


def body(n, seed):
    """n bytes that contain the marker everywhere (so any leaked plain text shows), unique per seed."""
    unit = MARK + hashlib.sha256(str(seed).encode()).hexdigest().encode() + b"\n"
    return (unit * (n // len(unit) + 1))[:n]


def err(fn):
    try:
        r = fn()
        return "OK", r["ResponseMetadata"]["HTTPStatusCode"]
    except Exception as e:  # botocore.exceptions.ClientError
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]


KEY1, KEY2 = os.urandom(32), os.urandom(32)


def ssec(key=KEY1, copy=False):
    p = "CopySource" if copy else ""
    return {f"{p}SSECustomerAlgorithm": "AES256", f"{p}SSECustomerKey": key}


B = "sse"
s3.create_bucket(Bucket=B)
CS = 255 * 1024  # the bucket's chunk size
size = 3 * CS + 1000
data = body(size, 1)

# --- 1. SSE-C ---
r = s3.put_object(Bucket=B, Key="c", Body=data, **ssec())
md5 = base64.b64encode(hashlib.md5(KEY1).digest()).decode()
check(r.get("SSECustomerAlgorithm") == "AES256" and r.get("SSECustomerKeyMD5") == md5,
      "SSE-C PUT answers the algorithm and the key's MD5")
check(r["ETag"].strip('"') != hashlib.md5(data).hexdigest(), "an SSE-C ETag is not the MD5 of the plain text")
g = s3.get_object(Bucket=B, Key="c", **ssec())
check(g["Body"].read() == data and g["ContentLength"] == size, "SSE-C GET with the key returns the object")
check(g.get("SSECustomerKeyMD5") == md5, "SSE-C GET answers the key's MD5")
h = s3.head_object(Bucket=B, Key="c", **ssec())
check(h["ContentLength"] == size and h["ETag"] == r["ETag"], "SSE-C HEAD with the key: size and ETag")
for a, b in [(CS - 10, CS + 10), (2 * CS - 1, 2 * CS), (0, 0), (size - 5, size - 1), (100, 3 * CS + 50)]:
    g = s3.get_object(Bucket=B, Key="c", Range=f"bytes={a}-{b}", **ssec())
    check(g["Body"].read() == data[a:b + 1], f"SSE-C range {a}-{b} across chunk boundaries")
g = s3.get_object(Bucket=B, Key="c", Range="bytes=-700", **ssec())
check(g["Body"].read() == data[-700:], "SSE-C suffix range")
check(err(lambda: s3.get_object(Bucket=B, Key="c")) == ("InvalidRequest", 400), "SSE-C GET without the key: 400")
check(err(lambda: s3.head_object(Bucket=B, Key="c"))[1] == 400, "SSE-C HEAD without the key: 400")
check(err(lambda: s3.get_object(Bucket=B, Key="c", **ssec(KEY2)))[1] == 400, "SSE-C GET with another key: 400")
check(err(lambda: s3.head_object(Bucket=B, Key="c", **ssec(KEY2)))[1] == 400, "SSE-C HEAD with another key: 400")
# Malformed keys, sent as raw signed requests (boto3 computes a correct MD5 itself).
def signed(method, path, headers, payload=b""):
    """Status and error code of a SigV4-signed request with these headers."""
    url = endpoint + path
    h = dict(headers)
    h["x-amz-content-sha256"] = hashlib.sha256(payload).hexdigest()
    req = AWSRequest(method=method, url=url, data=payload, headers=h)
    SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
    r = requests.request(method, url, data=payload, headers=dict(req.headers))
    m = re.search(rb"<Code>([^<]*)</Code>", r.content)
    return (m.group(1).decode() if m else "OK"), r.status_code


KB = base64.b64encode(KEY1).decode()
ALG = "x-amz-server-side-encryption-customer-algorithm"
KEYH = "x-amz-server-side-encryption-customer-key"
MD5H = "x-amz-server-side-encryption-customer-key-MD5"
cases = {
    "a short key": ({ALG: "AES256", KEYH: base64.b64encode(b"k" * 16).decode(),
                     MD5H: base64.b64encode(hashlib.md5(b"k" * 16).digest()).decode()}, "InvalidArgument"),
    "a wrong MD5": ({ALG: "AES256", KEYH: KB, MD5H: base64.b64encode(hashlib.md5(KEY2).digest()).decode()},
                    "InvalidArgument"),
    "no MD5": ({ALG: "AES256", KEYH: KB}, "InvalidArgument"),
    "no algorithm": ({KEYH: KB, MD5H: md5}, "InvalidArgument"),
    "no key": ({ALG: "AES256", MD5H: md5}, "InvalidArgument"),
    "a key that is not base64": ({ALG: "AES256", KEYH: "!!!!", MD5H: md5}, "InvalidArgument"),
    "AES128": ({ALG: "AES128", KEYH: KB, MD5H: md5}, "InvalidEncryptionAlgorithmError"),
    "SSE-C and AES256": ({ALG: "AES256", KEYH: KB, MD5H: md5, "x-amz-server-side-encryption": "AES256"},
                         "InvalidArgument"),
    "SSE-C and aws:kms": ({ALG: "AES256", KEYH: KB, MD5H: md5, "x-amz-server-side-encryption": "aws:kms"},
                          "InvalidArgument"),
}
for what, (hdrs, want) in cases.items():
    got = signed("PUT", f"/{B}/bad", hdrs, b"x")
    check(got == (want, 400), f"PUT with {what}: {want} 400 ({got})")
check(err(lambda: s3.head_object(Bucket=B, Key="bad"))[1] == 404, "and nothing was stored by the refused PUTs")
s3.put_object(Bucket=B, Key="plain", Body=data)
check(err(lambda: s3.get_object(Bucket=B, Key="plain", **ssec())) == ("InvalidRequest", 400),
      "SSE-C key headers for an object that is not SSE-C: 400 InvalidRequest")

s3.put_object(Bucket=B, Key="c-empty", Body=b"", **ssec())
g = s3.get_object(Bucket=B, Key="c-empty", **ssec())
check(g["Body"].read() == b"" and g["ContentLength"] == 0, "an empty SSE-C object")
check(err(lambda: s3.get_object(Bucket=B, Key="c-empty"))[1] == 400, "an empty SSE-C object needs its key too")
check(err(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", BucketKeyEnabled=True, **ssec()))[1] == 400,
      "a bucket key with SSE-C is refused")

# --- 2. SSE-S3 ---
r = s3.put_object(Bucket=B, Key="s", Body=data, ServerSideEncryption="AES256")
check(r.get("ServerSideEncryption") == "AES256", "SSE-S3 PUT answers AES256")
check(r["ETag"].strip('"') == hashlib.md5(data).hexdigest(), "an SSE-S3 ETag is the MD5 of the plain text")
g = s3.get_object(Bucket=B, Key="s")
check(g["Body"].read() == data and g.get("ServerSideEncryption") == "AES256", "SSE-S3 GET: data and header")
g = s3.get_object(Bucket=B, Key="s", Range=f"bytes={CS - 3}-{2 * CS + 3}")
check(g["Body"].read() == data[CS - 3:2 * CS + 4], "SSE-S3 range across chunks")
check(err(lambda: s3.get_object(Bucket=B, Key="s", **ssec())) == ("InvalidRequest", 400),
      "SSE-C headers on an SSE-S3 object: 400")
check(err(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ServerSideEncryption="aws:kms:dsse"))[1] == 501,
      "DSSE-KMS is refused with 501 NotImplemented")
check(err(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ServerSideEncryption="AES512")) == ("InvalidArgument", 400),
      "an unknown algorithm is InvalidArgument")
got = signed("PUT", f"/{B}/x", {"x-amz-server-side-encryption-aws-kms-key-id": kms_key}, b"x")
check(got == ("InvalidArgument", 400), f"a KMS key id without aws:kms is InvalidArgument ({got})")

# --- 3. SSE-KMS ---
arn = f"arn:aws:kms:us-east-1:000000000000:key/{kms_key}"
ctx = base64.b64encode(json.dumps({"app": "tests", "tenant": "a"}).encode()).decode()
r = s3.put_object(Bucket=B, Key="k", Body=data, ServerSideEncryption="aws:kms", SSEKMSKeyId=kms_key,
                  SSEKMSEncryptionContext=ctx)
check(r.get("ServerSideEncryption") == "aws:kms" and r.get("SSEKMSKeyId") == arn,
      f"SSE-KMS PUT answers aws:kms and the key's ARN ({r.get('SSEKMSKeyId')})")
check(r["ETag"].strip('"') != hashlib.md5(data).hexdigest(), "an SSE-KMS ETag is not the MD5 of the plain text")
g = s3.get_object(Bucket=B, Key="k", Range=f"bytes=5-{size - 5}")
check(g["Body"].read() == data[5:size - 4] and g.get("SSEKMSKeyId") == arn, "SSE-KMS GET of a range, with the key id")
r = s3.put_object(Bucket=B, Key="k-arn", Body=b"by arn", ServerSideEncryption="aws:kms", SSEKMSKeyId=arn)
check(s3.get_object(Bucket=B, Key="k-arn")["Body"].read() == b"by arn", "a KMS key named by its ARN")
r = s3.put_object(Bucket=B, Key="k-default", Body=b"default key", ServerSideEncryption="aws:kms")
check(r.get("SSEKMSKeyId", "").startswith("arn:aws:kms:") and r.get("SSEKMSKeyId") != arn,
      "aws:kms without a key id uses the keyring's default key")
check(s3.get_object(Bucket=B, Key="k-default")["Body"].read() == b"default key", "and reads back")
check(err(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ServerSideEncryption="aws:kms",
                                SSEKMSKeyId="no-such-key")) == ("KMS.NotFoundException", 400),
      "an unknown KMS key: 400 KMS.NotFoundException")
check(err(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ServerSideEncryption="aws:kms",
                                SSEKMSKeyId=disabled_key)) == ("KMS.DisabledException", 400),
      "a disabled KMS key: 400 KMS.DisabledException")
got = err(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ServerSideEncryption="aws:kms",
                                SSEKMSEncryptionContext=base64.b64encode(b"[1]").decode()))
check(got == ("InvalidArgument", 400), f"an encryption context that is not a JSON object of strings: InvalidArgument ({got})")
check(err(lambda: s3.head_object(Bucket=B, Key="x"))[1] == 404, "nothing stored by the refused KMS PUTs")

# --- 4. Multipart: aligned and unaligned parts, every mode ---
staged = {}


def multipart(key, part_sizes, create_kw, part_kw, complete_kw, bucket=B):
    mp = s3.create_multipart_upload(Bucket=bucket, Key=key, **create_kw)
    parts, whole = [], b""
    for i, n in enumerate(part_sizes, 1):
        d = body(n, f"{key}{i}")
        whole += d
        p = s3.upload_part(Bucket=bucket, Key=key, UploadId=mp["UploadId"], PartNumber=i, Body=d, **part_kw)
        parts.append({"PartNumber": i, "ETag": p["ETag"]})
    fid = db["__uploads"].find_one({"_id": mp["UploadId"]})["fileId"]
    staged[key] = {c["_id"] for c in db[f"{bucket}.chunks"].find({"files_id": fid}, {"_id": 1})}
    c = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=mp["UploadId"],
                                     MultipartUpload={"Parts": parts}, **complete_kw)
    return mp, c, whole


MiB = 1024 * 1024
for mode, kw, part_kw in [("SSE-C", ssec(), ssec()), ("SSE-S3", {"ServerSideEncryption": "AES256"}, {}),
                          ("SSE-KMS", {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key}, {})]:
    for layout, sizes in [("aligned", [5 * MiB, 5 * MiB, 1234]), ("unaligned", [5 * MiB, 5 * MiB + 7, 99])]:
        key = f"mp-{mode}-{layout}"
        _, c, whole = multipart(key, sizes, kw, part_kw, part_kw)
        read_kw = part_kw
        g = s3.get_object(Bucket=B, Key=key, **read_kw)
        check(g["Body"].read() == whole, f"{mode} multipart ({layout}) reads back whole")
        for a, b in [(5 * MiB - 10, 5 * MiB + 10), (MiB - 1, MiB), (len(whole) - 50, len(whole) - 1)]:
            got = s3.get_object(Bucket=B, Key=key, Range=f"bytes={a}-{b}", **read_kw)["Body"].read()
            check(got == whole[a:b + 1], f"{mode} multipart ({layout}) range {a}-{b} across parts")
        g = s3.get_object(Bucket=B, Key=key, PartNumber=2, **read_kw)
        check(g["Body"].read() == whole[sizes[0]:sizes[0] + sizes[1]], f"{mode} multipart ({layout}) partNumber=2")
        fid = db[f"{B}.files"].find_one({"filename": key})["_id"]
        final = {c["_id"] for c in db[f"{B}.chunks"].find({"files_id": fid}, {"_id": 1})}
        if layout == "aligned":
            check(final == staged[key], f"{mode} multipart (aligned): every part chunk adopted in place, none rewritten")
        else:
            check(len(final & staged[key]) == 5, f"{mode} multipart (unaligned): the first part (5 whole chunks) adopted in place, the unaligned rest re-sealed")
# An SSE-C upload's parts need the key, the same key.
mp = s3.create_multipart_upload(Bucket=B, Key="mp-c-keys", **ssec())
check(err(lambda: s3.upload_part(Bucket=B, Key="mp-c-keys", UploadId=mp["UploadId"], PartNumber=1, Body=b"x"))[1] == 400,
      "UploadPart of an SSE-C upload without the key: 400")
check(err(lambda: s3.upload_part(Bucket=B, Key="mp-c-keys", UploadId=mp["UploadId"], PartNumber=1, Body=b"x",
                                  **ssec(KEY2)))[1] == 400, "UploadPart of an SSE-C upload with another key: 400")
s3.abort_multipart_upload(Bucket=B, Key="mp-c-keys", UploadId=mp["UploadId"])
mp = s3.create_multipart_upload(Bucket=B, Key="mp-s-keys", ServerSideEncryption="AES256")
check(err(lambda: s3.upload_part(Bucket=B, Key="mp-s-keys", UploadId=mp["UploadId"], PartNumber=1, Body=b"x",
                                 **ssec()))[1] == 400, "UploadPart with SSE-C headers of an SSE-S3 upload: 400")
s3.abort_multipart_upload(Bucket=B, Key="mp-s-keys", UploadId=mp["UploadId"])
# SSE-C, aligned parts, completed without the key: adopted in place, no key needed.
_, c, whole = multipart("mp-c-nokey", [5 * MiB, 77], ssec(), ssec(), {})
check(s3.get_object(Bucket=B, Key="mp-c-nokey", **ssec())["Body"].read() == whole,
      "an aligned SSE-C upload completes without the key")
# Parts adopted in place: the object's chunks are the parts' chunks (same _ids), none rewritten.
files = db[f"{B}.files"]
f = files.find_one({"filename": "mp-SSE-KMS-aligned"})
check(f["chunkSize"] == MiB + 16 and f["length"] == 10 * MiB + 1234 + 11 * 16,
      f"an encrypted multipart object is a well-formed GridFS file of sealed chunks ({f['chunkSize']}, {f['length']})")

# --- 5. Copies between every combination, CopyObject and UploadPartCopy ---
src_kw = {"plain": {}, "SSE-C": ssec(KEY2), "SSE-S3": {"ServerSideEncryption": "AES256"},
          "SSE-KMS": {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key}}
read_kw = {"plain": {}, "SSE-C": ssec(KEY2), "SSE-S3": {}, "SSE-KMS": {}}
copy_read = {"plain": {}, "SSE-C": ssec(KEY2, copy=True), "SSE-S3": {}, "SSE-KMS": {}}
small = body(CS + 77, "copy")
for m, kw in src_kw.items():
    s3.put_object(Bucket=B, Key=f"src-{m}", Body=small, **kw)
for sm, dm in itertools.product(src_kw, src_kw):
    dst = f"copy-{sm}-to-{dm}"
    dkw = dict(src_kw[dm])
    if dm == "SSE-C":
        dkw = ssec(KEY1)
    r = s3.copy_object(Bucket=B, Key=dst, CopySource={"Bucket": B, "Key": f"src-{sm}"}, **copy_read[sm], **dkw)
    rkw = ssec(KEY1) if dm == "SSE-C" else {}
    g = s3.get_object(Bucket=B, Key=dst, **rkw)
    want = {"plain": None, "SSE-C": None, "SSE-S3": "AES256", "SSE-KMS": "aws:kms"}[dm]
    check(g["Body"].read() == small and g.get("ServerSideEncryption") == want,
          f"CopyObject {sm} -> {dm}")
    mp = s3.create_multipart_upload(Bucket=B, Key=f"upc-{sm}-{dm}", **dkw)
    p = s3.upload_part_copy(Bucket=B, Key=f"upc-{sm}-{dm}", UploadId=mp["UploadId"], PartNumber=1,
                            CopySource={"Bucket": B, "Key": f"src-{sm}"}, CopySourceRange="bytes=10-200009",
                            **copy_read[sm], **(ssec(KEY1) if dm == "SSE-C" else {}))
    s3.complete_multipart_upload(Bucket=B, Key=f"upc-{sm}-{dm}", UploadId=mp["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["CopyPartResult"]["ETag"]}]},
                                 **(ssec(KEY1) if dm == "SSE-C" else {}))
    g = s3.get_object(Bucket=B, Key=f"upc-{sm}-{dm}", **rkw)
    check(g["Body"].read() == small[10:200010], f"UploadPartCopy {sm} -> {dm}")
check(err(lambda: s3.copy_object(Bucket=B, Key="x", CopySource={"Bucket": B, "Key": "src-SSE-C"}))[1] == 400,
      "copying an SSE-C source without its key: 400")
mp = s3.create_multipart_upload(Bucket=B, Key="upc-nokey")
check(err(lambda: s3.upload_part_copy(Bucket=B, Key="upc-nokey", UploadId=mp["UploadId"], PartNumber=1,
                                      CopySource={"Bucket": B, "Key": "src-SSE-C"}))[1] == 400,
      "UploadPartCopy of an SSE-C source without its key: 400")
check(err(lambda: s3.upload_part_copy(Bucket=B, Key="upc-nokey", UploadId=mp["UploadId"], PartNumber=1,
                                      CopySource={"Bucket": B, "Key": "src-SSE-C"}, **ssec(KEY1, copy=True)))[1] == 400,
      "UploadPartCopy of an SSE-C source with another key: 400")
check(err(lambda: s3.upload_part_copy(Bucket=B, Key="upc-nokey", UploadId=mp["UploadId"], PartNumber=1,
                                      CopySource={"Bucket": B, "Key": "src-plain"}, **ssec(KEY1, copy=True)))[1] == 400,
      "SSE-C source headers for a source that is not SSE-C: 400")
s3.abort_multipart_upload(Bucket=B, Key="upc-nokey", UploadId=mp["UploadId"])
check(err(lambda: s3.copy_object(Bucket=B, Key="x", CopySource={"Bucket": B, "Key": "src-SSE-C"},
                                 **ssec(KEY1, copy=True)))[1] == 400, "copying an SSE-C source with another key: 400")
s3.copy_object(Bucket=B, Key="src-plain", CopySource={"Bucket": B, "Key": "src-plain"}, ServerSideEncryption="AES256")
check(s3.head_object(Bucket=B, Key="src-plain").get("ServerSideEncryption") == "AES256",
      "a copy onto itself that changes only the encryption is allowed (and encrypts)")

# --- 6. Bucket default encryption ---
D = "sse-default"
s3.create_bucket(Bucket=D)
check(err(lambda: s3.get_bucket_encryption(Bucket=D)) == ("ServerSideEncryptionConfigurationNotFoundError", 404),
      "a bucket without default encryption: 404")
s3.put_bucket_encryption(Bucket=D, ServerSideEncryptionConfiguration={"Rules": [
    {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
rule = s3.get_bucket_encryption(Bucket=D)["ServerSideEncryptionConfiguration"]["Rules"][0]
check(rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256", "GetBucketEncryption: AES256")
r = s3.put_object(Bucket=D, Key="a", Body=data)
check(r.get("ServerSideEncryption") == "AES256", "a PUT without headers gets the bucket's SSE-S3 default")
s3.put_bucket_encryption(Bucket=D, ServerSideEncryptionConfiguration={"Rules": [
    {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": kms_key},
     "BucketKeyEnabled": True}]})
rule = s3.get_bucket_encryption(Bucket=D)["ServerSideEncryptionConfiguration"]["Rules"][0]
check(rule["ApplyServerSideEncryptionByDefault"].get("KMSMasterKeyID") == arn and rule.get("BucketKeyEnabled") is True,
      "GetBucketEncryption: aws:kms with the key, BucketKeyEnabled")
r = s3.put_object(Bucket=D, Key="b", Body=data)
check(r.get("SSEKMSKeyId") == arn and r.get("BucketKeyEnabled") is True, "a PUT gets the bucket's SSE-KMS default")
r = s3.put_object(Bucket=D, Key="b2", Body=data, ServerSideEncryption="aws:kms")
check(r.get("SSEKMSKeyId") == arn, "an aws:kms PUT without a key id takes the bucket's default key")
_, c, whole = multipart("mp-default", [5 * MiB, 10], {}, {}, {}, bucket=D)
h = s3.head_object(Bucket=D, Key="mp-default")
check(h.get("SSEKMSKeyId") == arn and c.get("SSEKMSKeyId") == arn, "a multipart upload gets the bucket's default too")
check(s3.get_object(Bucket=D, Key="mp-default")["Body"].read() == whole, "and reads back")
check(err(lambda: s3.put_bucket_encryption(Bucket=D, ServerSideEncryptionConfiguration={"Rules": [
    {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "nope"}}]}))[0]
      == "KMS.NotFoundException", "a default naming an unknown key is refused")
s3.delete_bucket_encryption(Bucket=D)
r = s3.put_object(Bucket=D, Key="c", Body=data)
check("ServerSideEncryption" not in r, "after DeleteBucketEncryption new objects are stored in the clear")
check(s3.get_object(Bucket=D, Key="b")["Body"].read() == data, "objects written under the default keep it")
check(s3.head_object(Bucket=D, Key="a").get("ServerSideEncryption") == "AES256", "HEAD shows an object's encryption")

# --- Versioning: each version keeps its own encryption ---
V = "sse-versioned"
s3.create_bucket(Bucket=V)
s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Enabled"})
v1 = s3.put_object(Bucket=V, Key="k", Body=b"one", **ssec())["VersionId"]
v2 = s3.put_object(Bucket=V, Key="k", Body=b"two", ServerSideEncryption="aws:kms", SSEKMSKeyId=kms_key)["VersionId"]
check(s3.get_object(Bucket=V, Key="k", VersionId=v1, **ssec())["Body"].read() == b"one",
      "an older SSE-C version reads with its key")
check(err(lambda: s3.get_object(Bucket=V, Key="k", VersionId=v1))[1] == 400, "and not without it")
g = s3.get_object(Bucket=V, Key="k")
check(g["Body"].read() == b"two" and g.get("SSEKMSKeyId") == arn, "the current SSE-KMS version")
sizes = {v["VersionId"]: v["Size"] for v in s3.list_object_versions(Bucket=V)["Versions"]}
check(sizes == {v1: 3, v2: 3}, f"ListObjectVersions shows the plain sizes ({sizes})")

# --- 7. What the database shows: ciphertext chunks, readable as GridFS, no plain text ---
chunks = db[f"{B}.chunks"]
encrypted = [f for f in files.find({}) if f.get("metadata", {}).get("s3Sse")]
check(len(encrypted) >= 40, f"the encrypted objects carry s3Sse ({len(encrypted)})")
leaks = 0
for f in encrypted:
    for c in chunks.find({"files_id": f["_id"]}):
        if MARK in bytes(c["data"]) or b"by arn" in bytes(c["data"]) or b"default key" in bytes(c["data"]):
            leaks += 1
check(leaks == 0, "no chunk of an encrypted object holds its plain text")
plain = files.find_one({"filename": "plain"})
check(MARK in bytes(chunks.find_one({"files_id": plain["_id"]})["data"]), "(the marker is found in a plain object)")
fs = gridfs.GridFSBucket(db, bucket_name=B)
f = files.find_one({"filename": "s"})
raw = fs.open_download_stream(f["_id"]).read()
check(len(raw) == f["length"] == size + 4 * 16 and MARK not in raw,
      "PyMongo's GridFSBucket reads an encrypted object as a well-formed file of ciphertext")
sse_doc = f["metadata"]["s3Sse"]
check(sse_doc["mode"] == "AES256" and sse_doc["size"] == size and "dk" in sse_doc,
      "its metadata tells the mode, the plain size and a wrapped data key")
fc = files.find_one({"filename": "c"})["metadata"]["s3Sse"]
check(KEY1 not in json.dumps(fc, default=lambda b: bytes(b).hex()).encode() and "ver" in fc and "dk" not in fc,
      "an SSE-C object keeps a salted verifier, never the key nor a wrapped data key")

# --- 8. Tampering: a flipped bit, swapped chunks, a removed last chunk ---
def fails(key, **kw):
    try:
        got = s3.get_object(Bucket=B, Key=key, **kw)["Body"].read()
        return got is None  # anything read is wrong: the read must fail
    except Exception:
        return True

s3.put_object(Bucket=B, Key="t1", Body=data, ServerSideEncryption="AES256")
f = files.find_one({"filename": "t1"})
c1 = chunks.find_one({"files_id": f["_id"], "n": 1})
flipped = bytearray(c1["data"])
flipped[5] ^= 1
chunks.update_one({"_id": c1["_id"]}, {"$set": {"data": bytes(flipped)}})
check(fails("t1"), "a flipped bit fails the GET")
check(fails("t1", Range=f"bytes={CS + 1}-{CS + 9}"), "and a range inside the tampered chunk")
check(s3.get_object(Bucket=B, Key="t1", Range="bytes=0-99")["Body"].read() == data[:100],
      "a range in an untouched chunk still reads")
s3.put_object(Bucket=B, Key="t2", Body=data, ServerSideEncryption="AES256")
f = files.find_one({"filename": "t2"})
c0 = chunks.find_one({"files_id": f["_id"], "n": 0})
c1 = chunks.find_one({"files_id": f["_id"], "n": 1})
chunks.update_one({"_id": c0["_id"]}, {"$set": {"data": c1["data"]}})
chunks.update_one({"_id": c1["_id"]}, {"$set": {"data": c0["data"]}})
check(fails("t2") and fails("t2", Range="bytes=0-10"), "swapped chunks fail the GET")
big = body(3 * MiB, "big")
s3.put_object(Bucket=B, Key="t3", Body=big, ServerSideEncryption="AES256")
f = files.find_one({"filename": "t3"})
last = chunks.find_one({"files_id": f["_id"]}, sort=[("n", -1)])
chunks.update_one({"_id": last["_id"]}, {"$set": {"data": bytes(last["data"])[:-1] + bytes([last["data"][-1] ^ 1])}})
check(fails("t3"), "a tampered last chunk of a streamed (3 MiB) object fails the GET")
s3.put_object(Bucket=B, Key="t4", Body=data, ServerSideEncryption="AES256")
f4 = files.find_one({"filename": "t4"})
s3.put_object(Bucket=B, Key="t5", Body=body(size, 5), ServerSideEncryption="AES256")
f5 = files.find_one({"filename": "t5"})
c4 = chunks.find_one({"files_id": f4["_id"], "n": 2})
c5 = chunks.find_one({"files_id": f5["_id"], "n": 2})
chunks.update_one({"_id": c4["_id"]}, {"$set": {"data": c5["data"]}})
check(fails("t4", Range=f"bytes={2 * CS}-{2 * CS + 10}"), "a chunk replayed from another object fails")
# Truncation: drop the last chunk and shorten the files document and the plain size to match.
s3.put_object(Bucket=B, Key="t6", Body=data, ServerSideEncryption="AES256")
f6 = files.find_one({"filename": "t6"})
chunks.delete_one({"files_id": f6["_id"], "n": 3})
files.update_one({"_id": f6["_id"]}, {"$set": {"length": 3 * (CS + 16), "metadata.s3Sse.size": 3 * CS}})
check(fails("t6") and fails("t6", Range=f"bytes={2 * CS}-{2 * CS + 5}"),
      "a truncated object (last chunk dropped, lengths shortened) fails: its new last chunk is not sealed as last")

print("sse: all checks passed")
