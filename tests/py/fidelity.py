"""Smaller S3 behaviours that clients and conformance suites check, against a running grids3,
each as AWS documents it (boto3, and a second key for ownership answers).

Usage: python fidelity.py ENDPOINT ACCESS_KEY SECRET_KEY SECOND_ACCESS_KEY SECOND_SECRET_KEY
"""
import sys

from s3check import check, client as make_client, code

endpoint, ak, sk, ak2, sk2 = sys.argv[1:6]
s3 = make_client(endpoint, ak, sk)
other = make_client(endpoint, ak2, sk2)


def raw_code(fn):
    """The error code and HTTP status of a call."""
    try:
        r = fn()
        return "OK", r["ResponseMetadata"]["HTTPStatusCode"]
    except Exception as e:  # botocore.exceptions.ClientError
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]


s3.create_bucket(Bucket="fid")
for i in range(3):
    s3.put_object(Bucket="fid", Key=f"k{i}", Body=b"x")

# max-keys=0: empty and not truncated, v1 and v2.
r = s3.list_objects_v2(Bucket="fid", MaxKeys=0)
check(r["KeyCount"] == 0 and not r["IsTruncated"] and "Contents" not in r, f"ListObjectsV2 max-keys=0 ({r.get('KeyCount')}, {r['IsTruncated']})")
r = s3.list_objects(Bucket="fid", MaxKeys=0)
check(not r["IsTruncated"] and "Contents" not in r, "ListObjects max-keys=0")

# Control characters in prefixes come back as the client sent them (boto3 asks for
# encoding-type=url and decodes what S3 encodes).
s3.put_object(Bucket="fid", Key="\nline", Body=b"x")
for fn in (s3.list_objects, s3.list_objects_v2):
    r = fn(Bucket="fid", Prefix="\n", Delimiter="/")
    check(r["Prefix"] == "\n" and [o["Key"] for o in r["Contents"]] == ["\nline"], f"{fn.__name__} prefix \\n ({r['Prefix']!r})")
r = s3.list_objects(Bucket="fid", Marker="\n")
check(r["Marker"] == "\n", f"list_objects marker \\n ({r['Marker']!r})")
r = s3.list_objects_v2(Bucket="fid", StartAfter="\n")
check(r["StartAfter"] == "\n", f"list_objects_v2 start-after \\n ({r['StartAfter']!r})")
s3.delete_object(Bucket="fid", Key="\nline")

# Bucket names, by AWS's full rules.
for bad in ["ab", "a" * 64, "my-.bucket", "my.-bucket", "192.168.5.4", "xn--bucket", "bucket-s3alias", "bucket--ol-s3",
            "Bucket", "bucket_", "-bucket", "bucket."]:
    check(code(lambda: s3.create_bucket(Bucket=bad)) == "InvalidBucketName", f"bucket name {bad!r} is invalid")

# CreateBucket again: 200 for its owner in us-east-1, 409 BucketAlreadyExists for another key.
check(raw_code(lambda: s3.create_bucket(Bucket="fid")) == ("OK", 200), "CreateBucket of one's own bucket in us-east-1: 200")
check(raw_code(lambda: other.create_bucket(Bucket="fid")) == ("BucketAlreadyExists", 409), "another key's: 409 BucketAlreadyExists")

# HeadBucket names the region; ListBuckets pages and filters.
h = s3.head_bucket(Bucket="fid")
check(h["ResponseMetadata"]["HTTPHeaders"].get("x-amz-bucket-region") == "us-east-1", "HeadBucket x-amz-bucket-region")
for name in ["fid-a", "fid-b", "fid-c", "other-z"]:
    s3.create_bucket(Bucket=name)
r = s3.list_buckets(Prefix="fid-", MaxBuckets=2)
names = [b["Name"] for b in r["Buckets"]]
check(names == ["fid-a", "fid-b"] and r.get("ContinuationToken"), f"ListBuckets prefix and max-buckets ({names})")
r2 = s3.list_buckets(Prefix="fid-", MaxBuckets=2, ContinuationToken=r["ContinuationToken"])
check([b["Name"] for b in r2["Buckets"]] == ["fid-c"] and not r2.get("ContinuationToken"), "ListBuckets continuation-token")
check(r2.get("Prefix") == "fid-", "ListBuckets echoes the prefix")
check(all(b.get("BucketRegion") == "us-east-1" for b in r["Buckets"]), "ListBuckets names each bucket's region")
check([b["Name"] for b in s3.list_buckets(BucketRegion="us-east-1", Prefix="other")["Buckets"]] == ["other-z"],
      "ListBuckets bucket-region")
check(s3.list_buckets(BucketRegion="eu-west-1")["Buckets"] == [], "a region with no buckets lists none")

# Conditional writes.
etag = s3.put_object(Bucket="fid", Key="c", Body=b"one")["ETag"]
check(raw_code(lambda: s3.put_object(Bucket="fid", Key="c", Body=b"two", IfNoneMatch=etag))[0] == "PreconditionFailed",
      "If-None-Match: <current etag> is 412")
check(raw_code(lambda: s3.put_object(Bucket="fid", Key="c", Body=b"two", IfNoneMatch='"0123"'))[0] == "OK",
      "If-None-Match: <another etag> writes")
check(raw_code(lambda: s3.put_object(Bucket="fid", Key="none", Body=b"x", IfMatch=etag))[0] == "NoSuchKey",
      "If-Match on a missing key is 404 NoSuchKey")

# Tags: an empty value, AWS's order, and InvalidTag for bad keys and values.
s3.put_object(Bucket="fid", Key="t", Body=b"x", Tagging="foo=bar&bar")
tags = s3.get_object_tagging(Bucket="fid", Key="t")["TagSet"]
check(sorted((t["Key"], t["Value"]) for t in tags) == [("bar", ""), ("foo", "bar")], f"a tag without a value ({tags})")
for bad in ["k%00=v", "k=v%00", ("a" * 129) + "=v", "k=" + "v" * 257]:
    got = code(lambda: s3.put_object(Bucket="fid", Key="t2", Body=b"x", Tagging=bad))
    check(got == "InvalidTag", f"InvalidTag for {bad[:20]!r} ({got})")

# Non-ASCII user metadata, as botocore sends it (ISO-8859-1 on the wire, signed as UTF-8):
# accepted, stored as text, and returned as S3 returns it, an RFC 2047 encoded-word.
# (botocore refuses them up front unless its ASCII check is turned off, as callers who need
# them do.)
from botocore.handlers import validate_ascii_metadata  # noqa: E402

s3.meta.events.unregister("before-parameter-build.s3.PutObject", validate_ascii_metadata)
s3.put_object(Bucket="fid", Key="meta", Body=b"x", Metadata={"name": "café", "plain": "ascii"})
got = s3.head_object(Bucket="fid", Key="meta")["Metadata"]
check(got == {"name": "=?UTF-8?B?Y2Fmw6k=?=", "plain": "ascii"}, f"non-ASCII metadata ({got})")

# GetObject / HeadObject ?partNumber=N.
mp = s3.create_multipart_upload(Bucket="fid", Key="mp")
p1 = s3.upload_part(Bucket="fid", Key="mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"a" * (5 * 1024 * 1024))
p2 = s3.upload_part(Bucket="fid", Key="mp", UploadId=mp["UploadId"], PartNumber=2, Body=b"b" * 1000)
s3.complete_multipart_upload(Bucket="fid", Key="mp", UploadId=mp["UploadId"], MultipartUpload={"Parts": [
    {"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
again = s3.complete_multipart_upload(Bucket="fid", Key="mp", UploadId=mp["UploadId"], MultipartUpload={"Parts": [
    {"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
check(again["ETag"] == s3.head_object(Bucket="fid", Key="mp")["ETag"], "completing a completed upload again: 200, same result")
r = s3.get_object(Bucket="fid", Key="mp", PartNumber=2)
check(r["Body"].read() == b"b" * 1000 and r["PartsCount"] == 2
      and r["ContentRange"] == f"bytes {5 * 1024 * 1024}-{5 * 1024 * 1024 + 999}/{5 * 1024 * 1024 + 1000}",
      "GetObject partNumber=2 of a multipart object: that part, with PartsCount")
h = s3.head_object(Bucket="fid", Key="mp", PartNumber=1)
check(h["ContentLength"] == 5 * 1024 * 1024 and h["PartsCount"] == 2, "HeadObject partNumber=1")
check(raw_code(lambda: s3.get_object(Bucket="fid", Key="mp", PartNumber=3)) == ("InvalidPartNumber", 416),
      "a part past the last: 416 InvalidPartNumber")
r = s3.get_object(Bucket="fid", Key="k0", PartNumber=1)
check(r["Body"].read() == b"x" and r["ResponseMetadata"]["HTTPStatusCode"] == 206 and "PartsCount" not in r,
      "part 1 of a non-multipart object is the whole object")
check(raw_code(lambda: s3.head_object(Bucket="fid", Key="k0", PartNumber=2))[1] == 416, "part 2 of it is 416")
check(raw_code(lambda: s3.get_object(Bucket="fid", Key="k0", PartNumber=1, Range="bytes=0-0"))[0] == "InvalidRequest",
      "partNumber with a Range is InvalidRequest")

# Multipart checksums: algorithm and type reported at creation, in ListParts and
# ListMultipartUploads; Complete's result carries the full-object CRC32, as zlib computes it.
import base64  # noqa: E402
import zlib  # noqa: E402

mp = s3.create_multipart_upload(Bucket="fid", Key="crc", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
check((mp.get("ChecksumAlgorithm"), mp.get("ChecksumType")) == ("CRC32", "FULL_OBJECT"), "CreateMultipartUpload echoes them")
chunks = [b"c" * (5 * 1024 * 1024), b"d" * 4321]
done = []
for i, body in enumerate(chunks, 1):
    r = s3.upload_part(Bucket="fid", Key="crc", UploadId=mp["UploadId"], PartNumber=i, Body=body, ChecksumAlgorithm="CRC32")
    done.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
lp = s3.list_parts(Bucket="fid", Key="crc", UploadId=mp["UploadId"])
check((lp.get("ChecksumAlgorithm"), lp.get("ChecksumType")) == ("CRC32", "FULL_OBJECT")
      and all("ChecksumCRC32" in p for p in lp["Parts"]), "ListParts names them, with each part's checksum")
ups = [u for u in s3.list_multipart_uploads(Bucket="fid")["Uploads"] if u["Key"] == "crc"]
check((ups[0].get("ChecksumAlgorithm"), ups[0].get("ChecksumType")) == ("CRC32", "FULL_OBJECT"), "ListMultipartUploads too")
c = s3.complete_multipart_upload(Bucket="fid", Key="crc", UploadId=mp["UploadId"], MultipartUpload={"Parts": done})
whole = base64.b64encode(zlib.crc32(b"".join(chunks)).to_bytes(4, "big")).decode()
check(c.get("ChecksumCRC32") == whole and c.get("ChecksumType") == "FULL_OBJECT",
      f"Complete's result carries the full-object CRC32 ({c.get('ChecksumCRC32')} vs {whole})")
check(raw_code(lambda: s3.create_multipart_upload(Bucket="fid", Key="x", ChecksumAlgorithm="SHA256",
                                                  ChecksumType="FULL_OBJECT"))[0] == "InvalidRequest",
      "SHA256 has no full-object type")

# Presigned URLs: X-Amz-Expires past a week is AuthorizationQueryParametersError (400).
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402


def fetch(url):
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

v4 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk, region_name="us-east-1",
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
status, body = fetch(v4.generate_presigned_url("get_object", Params={"Bucket": "fid", "Key": "k0"}, ExpiresIn=604801))
check(status == 403 and b"AccessDenied" in body, f"X-Amz-Expires of more than a week is 403 ({status})")
for expires in (0, -1000):
    url = v4.generate_presigned_url("get_object", Params={"Bucket": "fid", "Key": "k0"}, ExpiresIn=3600)
    status, body = fetch(url.replace("X-Amz-Expires=3600", f"X-Amz-Expires={expires}"))
    check(status == 403 and b"AccessDenied" in body, f"X-Amz-Expires={expires} is 403 ({status})")
import subprocess  # noqa: E402
url = v4.generate_presigned_url("put_object", Params={"Bucket": "fid", "Key": "late"}, ExpiresIn=-1000)
out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "x", url],
                     capture_output=True, text=True)
check(out.stdout == "403", f"an expired presigned PUT is 403 ({out.stdout})")
status, body = fetch(v4.generate_presigned_url("get_object", Params={"Bucket": "fid", "Key": "k0"}, ExpiresIn=604800))
check(status == 200 and body == b"x", "a week exactly is fine")

# DeleteBucket right after its last object is deleted (overwritten revisions included).
s3.create_bucket(Bucket="fid-gone")
for body in [b"1", b"2", b"3"]:
    s3.put_object(Bucket="fid-gone", Key="k", Body=body)
s3.delete_object(Bucket="fid-gone", Key="k")
check(raw_code(lambda: s3.delete_bucket(Bucket="fid-gone")) == ("OK", 204), "DeleteBucket right after the last delete")

# Expect: 100-continue: a request refused early (here: no such bucket) is answered before its
# body is sent; an accepted one gets its 100 Continue and uploads.
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

big = os.path.join(tempfile.mkdtemp(), "big")
with open(big, "wb") as f:
    f.write(b"z" * (4 * 1024 * 1024))


def curl_put(url):
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_upload}", "-X", "PUT",
                          "-H", "Expect: 100-continue", "--expect100-timeout", "30", "--aws-sigv4", "aws:amz:us-east-1:s3",
                          "--user", f"{ak}:{sk}", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                          "--data-binary", f"@{big}", url], capture_output=True, text=True)
    status, sent = out.stdout.split()
    return int(status), int(float(sent))


status, sent = curl_put(f"{endpoint}/no-such-bucket-here/k")
check(status == 404 and sent == 0, f"Expect: 100-continue refused early sends no body ({status}, {sent} bytes sent)")
status, sent = curl_put(f"{endpoint}/fid/big")
check(status == 200 and sent == 4 * 1024 * 1024, f"and an accepted one uploads ({status}, {sent} bytes)")

# Sub-resources grids3 does not configure answer as AWS does for an unconfigured bucket.
check(code(lambda: s3.get_bucket_website(Bucket="fid")) == "NoSuchWebsiteConfiguration", "GetBucketWebsite")
check(code(lambda: s3.get_bucket_replication(Bucket="fid")) == "ReplicationConfigurationNotFoundError", "GetBucketReplication")
check(code(lambda: s3.get_bucket_lifecycle_configuration(Bucket="fid")) == "NoSuchLifecycleConfiguration",
      "GetBucketLifecycleConfiguration")
check(code(lambda: s3.get_bucket_encryption(Bucket="fid")) == "ServerSideEncryptionConfigurationNotFoundError",
      "GetBucketEncryption")
check(code(lambda: s3.get_object_lock_configuration(Bucket="fid")) == "ObjectLockConfigurationNotFoundError",
      "GetObjectLockConfiguration")
check("LoggingEnabled" not in s3.get_bucket_logging(Bucket="fid"), "GetBucketLogging: logging off")
n = s3.get_bucket_notification_configuration(Bucket="fid")
check(not any(k.endswith("Configurations") for k in n), "GetBucketNotificationConfiguration: none")
check("Status" not in s3.get_bucket_accelerate_configuration(Bucket="fid"), "GetBucketAccelerateConfiguration: none")
check(s3.get_bucket_request_payment(Bucket="fid")["Payer"] == "BucketOwner", "GetBucketRequestPayment: BucketOwner")
check(not s3.list_bucket_analytics_configurations(Bucket="fid")["IsTruncated"], "ListBucketAnalyticsConfigurations: none")
check(not s3.list_bucket_metrics_configurations(Bucket="fid")["IsTruncated"], "ListBucketMetricsConfigurations: none")
check(not s3.list_bucket_inventory_configurations(Bucket="fid")["IsTruncated"], "ListBucketInventoryConfigurations: none")
check(not s3.list_bucket_intelligent_tiering_configurations(Bucket="fid")["IsTruncated"],
      "ListBucketIntelligentTieringConfigurations: none")
check(code(lambda: s3.get_bucket_analytics_configuration(Bucket="fid", Id="x")) == "NoSuchConfiguration",
      "GetBucketAnalyticsConfiguration of an unknown id")
try:
    s3.put_bucket_replication(Bucket="fid", ReplicationConfiguration={
        "Role": "arn:aws:iam::1:role/r",
        "Rules": [{"Status": "Enabled", "Prefix": "", "Destination": {"Bucket": "arn:aws:s3:::x"}}]})
    check(False, "PutBucketReplication refused")
except Exception as e:
    check(e.response["Error"]["Code"] == "NotImplemented" and "replication" in e.response["Error"]["Message"],
          f"PutBucketReplication is 501 naming the sub-resource ({e.response['Error']['Message']})")
# The website configuration is stored and read back (served by the website endpoint, tests/it/website.rs).
s3.put_bucket_website(Bucket="fid", WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}})
check(s3.get_bucket_website(Bucket="fid")["IndexDocument"]["Suffix"] == "index.html", "PutBucketWebsite stored")
check(code(lambda: other.get_bucket_website(Bucket="fid")) == "AccessDenied", "and only the owner may ask")

print("fidelity: all checks passed")
