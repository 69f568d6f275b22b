"""Issue 40, item 6: MinIO's extensions that the MinIO SDKs use, through minio-py (and
boto3 with MinIO's header for the force delete, which minio-py does not send), against a
running grids3. Each is honoured as MinIO documents it, and an AWS client sees no change.

Usage: python minio_ext.py ENDPOINT ACCESS_KEY SECRET_KEY SECOND_ACCESS_KEY SECOND_SECRET_KEY
"""
import io
import json
import sys
import urllib.parse

import tarfile

from minio import Minio
from minio.commonconfig import ENABLED, SnowballObject, Tags
from minio.versioningconfig import VersioningConfig

from s3check import check, client as make_client, code

endpoint, ak, sk, ak2, sk2 = sys.argv[1:6]
url = urllib.parse.urlparse(endpoint)
mc = Minio(url.netloc, access_key=ak, secret_key=sk, secure=False, region="us-east-1")
mc2 = Minio(url.netloc, access_key=ak2, secret_key=sk2, secure=False, region="us-east-1")
s3 = make_client(endpoint, ak, sk)

# ExcludedPrefixes / ExcludeFolders: writes under them are not versioned.
B = "minio-versions"
mc.make_bucket(B)
mc.set_bucket_versioning(B, VersioningConfig(ENABLED, excluded_prefixes=["tmp/", "jobs/*/_temporary/"], exclude_folders=True))
got = mc.get_bucket_versioning(B)
check(got.status == "Enabled" and got.excluded_prefixes == ["tmp/", "jobs/*/_temporary/"] and got.exclude_folders,
      f"GetBucketVersioning returns the exclusions ({got.status}, {got.excluded_prefixes}, {got.exclude_folders})")
for key in ["tmp/a", "jobs/7/_temporary/part-0", "folder/", "kept/a"]:
    for body in [b"one", b"two"]:
        mc.put_object(B, key, io.BytesIO(body), len(body))
def versions(key):
    return [v for v in s3.list_object_versions(Bucket=B, Prefix=key).get("Versions", []) if v["Key"] == key]
for key in ["tmp/a", "jobs/7/_temporary/part-0", "folder/"]:
    vs = versions(key)
    check([v["VersionId"] for v in vs] == ["null"], f"{key} is excluded: one null version after two writes ({[v['VersionId'] for v in vs]})")
vs = versions("kept/a")
check(len(vs) == 2 and all(v["VersionId"] != "null" for v in vs), "kept/a is versioned: two versions")
mc.remove_object(B, "tmp/a")
r = s3.list_object_versions(Bucket=B, Prefix="tmp/a")
check(not r.get("Versions") and [m["VersionId"] for m in r.get("DeleteMarkers", [])] == ["null"],
      "a delete under an excluded prefix leaves a null marker only (the null version is gone)")
# An AWS client's configuration has none of it, and sees none.
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
check(mc.get_bucket_versioning(B).excluded_prefixes in ([], None), "a configuration without exclusions removes them")
check("ExcludedPrefixes" not in str(s3.get_bucket_versioning(Bucket=B)), "and GetBucketVersioning is AWS's again")
import requests as rq
from botocore.awsrequest import AWSRequest
from botocore.auth import SigV4Auth
from botocore.credentials import Credentials
def signed(method, path, body=b"", headers=None):
    headers = dict(headers or {})
    # SigV4 with a body needs its hash (botocore's plain SigV4Auth does not add it).
    headers.setdefault("x-amz-content-sha256", __import__("hashlib").sha256(body).hexdigest())
    req = AWSRequest(method=method, url=f"{endpoint}{path}", data=body, headers=headers)
    SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
    return rq.request(method, req.url, data=body, headers=dict(req.headers))
r = signed("PUT", f"/{B}?versioning", b"<VersioningConfiguration><ExcludeFolders>true</ExcludeFolders></VersioningConfiguration>")
check(r.status_code == 400 and "InvalidArgument" in r.text, f"exclusions without a Status are refused, not ignored ({r.status_code} {r.text[:300]})")
# Object Lock: every key stays versioned (a retained version is never a null version to replace).
s3.create_bucket(Bucket="minio-lock-excl", ObjectLockEnabledForBucket=True)
try:
    mc.set_bucket_versioning("minio-lock-excl", VersioningConfig(ENABLED, excluded_prefixes=["ledger/"]))
    check(False, "exclusions on an Object Lock bucket are refused")
except Exception as e:
    check("InvalidBucketState" in str(e), "exclusions on an Object Lock bucket are refused (InvalidBucketState)")
s3.create_bucket(Bucket="minio-excl-lock")
mc.set_bucket_versioning("minio-excl-lock", VersioningConfig(ENABLED, excluded_prefixes=["tmp/"]))
check(code(lambda: s3.put_object_lock_configuration(Bucket="minio-excl-lock", ObjectLockConfiguration={
    "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})) == "InvalidBucketState",
    "and Object Lock on a bucket with exclusions")
bad = VersioningConfig("Suspended", excluded_prefixes=["tmp/"])
try:
    mc.set_bucket_versioning(B, bad)
    check(False, "exclusions with Suspended are refused")
except Exception as e:
    check("InvalidArgument" in str(e), f"exclusions with Suspended are refused ({e})")
try:
    mc.set_bucket_versioning(B, VersioningConfig(ENABLED, excluded_prefixes=[f"p{i}/" for i in range(11)]))
    check(False, "more than 10 excluded prefixes are refused")
except Exception as e:
    check("InvalidArgument" in str(e), "more than 10 excluded prefixes are refused")

# Snowball: a tar (and a gzipped tar) stored member by member.
S = "minio-snowball"
mc.make_bucket(S)
objs = [SnowballObject("a/one.txt", data=io.BytesIO(b"first"), length=5),
        SnowballObject("a/two.json", data=io.BytesIO(b"{}"), length=2),
        SnowballObject("b/" + "long-" * 40 + ".bin", data=io.BytesIO(b"x" * 300000), length=300000)]
mc.upload_snowball_objects(S, objs)
keys = sorted(o.object_name for o in mc.list_objects(S, recursive=True))
check(keys == sorted(["a/one.txt", "a/two.json", "b/" + "long-" * 40 + ".bin"]),
      f"upload_snowball_objects stores each member, and not the archive ({keys})")
check(mc.get_object(S, "a/one.txt").read() == b"first", "a member's bytes")
check(len(mc.get_object(S, "b/" + "long-" * 40 + ".bin").read()) == 300000, "a long (pax) name's member, 300,000 bytes")
check(mc.stat_object(S, "a/two.json").content_type == "application/json", "a member's Content-Type by its extension")
mc.upload_snowball_objects(S, [SnowballObject("gz/c.txt", data=io.BytesIO(b"zipped"), length=6)], compression=True)
check(mc.get_object(S, "gz/c.txt").read() == b"zipped", "a gzipped archive too")
mc.upload_snowball_objects(S, [SnowballObject("p.txt", data=io.BytesIO(b"pre"), length=3)],
                           metadata={"X-Amz-Meta-Minio-Snowball-Prefix": "under"})
check(mc.get_object(S, "under/p.txt").read() == b"pre", "X-Amz-Meta-Minio-Snowball-Prefix puts members under a prefix")
# Each member is authorized as its own PutObject: a key allowed to write under in/ only
# cannot write elsewhere through an archive.
# (The request itself is a PutObject of minio-py's archive key, snowball.<random>.tar, as
# MinIO authorizes it; the archive is never stored.)
s3.put_bucket_policy(Bucket=S, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
    "Principal": {"AWS": ak2}, "Action": "s3:PutObject",
    "Resource": [f"arn:aws:s3:::{S}/in/*", f"arn:aws:s3:::{S}/snowball.*"]}]}))
mc2.upload_snowball_objects(S, [SnowballObject("ok.txt", data=io.BytesIO(b"ok"), length=2)],
                            metadata={"X-Amz-Meta-Minio-Snowball-Prefix": "in"})
check(mc.get_object(S, "in/ok.txt").read() == b"ok", "a key allowed to write under in/ may extract there")
try:
    mc2.upload_snowball_objects(S, [SnowballObject("elsewhere.txt", data=io.BytesIO(b"no"), length=2)])
    check(False, "a member outside what the key may write is refused")
except Exception as e:
    check("AccessDenied" in str(e), f"a member outside what the key may write is refused ({type(e).__name__})")
check(code(lambda: s3.head_object(Bucket=S, Key="elsewhere.txt")) == "404", "and is not stored")
# A root Deny binds a snowball's members too.
s3.put_bucket_policy(Bucket=S, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": ak2}, "Action": "s3:PutObject",
     "Resource": [f"arn:aws:s3:::{S}/in/*", f"arn:aws:s3:::{S}/snowball.*"]},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{S}/protected/*"}]}))
try:
    mc.upload_snowball_objects(S, [SnowballObject("protected/evil", data=io.BytesIO(b"no"), length=2)])
    check(False, "an explicit Deny binds the root key's members")
except Exception as e:
    check("AccessDenied" in str(e), "an explicit Deny binds the root key's members")
# Damaged archives are refused: an empty body, a partial block, a gzip stream whose CRC fails.
import gzip
def snow(body):
    return signed("PUT", f"/{S}/snow.tar", body, {"X-Amz-Meta-Snowball-Auto-Extract": "true"})
for what, body in [("an empty body", b""), ("a partial header", b"x" * 88)]:
    r = snow(body)
    check(r.status_code == 400 and "The snowball archive is not a valid tar" in r.text, f"{what} is refused ({r.status_code} {r.text[:200]})")
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    info = tarfile.TarInfo("crc/bad.txt"); info.size = 3
    t.addfile(info, io.BytesIO(b"abc"))
z = bytearray(gzip.compress(buf.getvalue()))
z[-8] ^= 0xff
r = snow(bytes(z))
check(r.status_code == 400 and "not a valid tar" in r.text and code(lambda: s3.head_object(Bucket=S, Key="crc/bad.txt")) == "404",
      f"a gzip stream whose CRC does not match is refused, and none of its members is stored ({r.status_code} {r.text[:200]})")
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT, encoding="latin-1") as t:
    info = tarfile.TarInfo("caf\xe9.txt"); info.size = 1
    t.addfile(info, io.BytesIO(b"x"))
r = snow(buf.getvalue())
check(r.status_code == 400 and "not UTF-8" in r.text, f"a member name that is not UTF-8 is refused ({r.status_code})")
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    for name in ["long/ok.txt", "long/" + "z" * 1100]:
        info = tarfile.TarInfo(name); info.size = 1
        t.addfile(info, io.BytesIO(b"x"))
r = snow(buf.getvalue())
check(r.status_code == 400 and "KeyTooLong" in r.text and code(lambda: s3.head_object(Bucket=S, Key="long/ok.txt")) == "404",
      f"a member key over 1,024 bytes stores nothing, not even the members before it ({r.status_code})")
# A body that fails its signature's payload hash stores nothing.
import hashlib, requests
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    info = tarfile.TarInfo("tampered.txt"); info.size = 4
    t.addfile(info, io.BytesIO(b"evil"))
body = buf.getvalue()
req = AWSRequest(method="PUT", url=f"{endpoint}/{S}/snow.tar", data=body,
                 headers={"X-Amz-Meta-Snowball-Auto-Extract": "true", "x-amz-content-sha256": hashlib.sha256(b"other").hexdigest()})
SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
r = requests.put(req.url, data=body, headers=dict(req.headers))
check(r.status_code == 400 and code(lambda: s3.head_object(Bucket=S, Key="tampered.txt")) == "404",
      f"a body whose payload hash does not match stores no member ({r.status_code})")

# ListObjectsV2 metadata=true: user metadata and tags per key (MinIO's UserMetadata/UserTags).
M = "minio-meta"
mc.make_bucket(M)
tags = Tags.new_object_tags()
tags["team"] = "blue"
mc.put_object(M, "doc.txt", io.BytesIO(b"hi"), 2, content_type="text/plain", metadata={"X-Amz-Meta-Project": "one"}, tags=tags)
mc.put_object(M, "plain.bin", io.BytesIO(b"x"), 1)
objs = {o.object_name: o for o in mc.list_objects(M, include_user_meta=True)}
d = objs["doc.txt"]
check(d.metadata and d.metadata.get("X-Amz-Meta-Project") == "one" and d.metadata.get("content-type") == "text/plain",
      f"include_user_meta lists user metadata and the content type ({d.metadata})")
check(d.tags is not None and dict(d.tags) == {"team": "blue"}, f"and the tags ({d.tags})")
plain = {o.object_name: o for o in mc.list_objects(M)}
check(not plain["doc.txt"].metadata, "without it, nothing more")
raw = s3.list_objects_v2(Bucket=M)
check("UserMetadata" not in str(raw), "and boto3's listing is AWS's")
# Per key, as a GetObject would be: a key that may list but not read sees no metadata.
s3.put_bucket_policy(Bucket=M, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
    "Principal": {"AWS": ak2}, "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{M}"}]}))
o2 = {o.object_name: o for o in mc2.list_objects(M, include_user_meta=True)}
check(not o2["doc.txt"].metadata and o2["doc.txt"].tags is None,
      "a key that may list but not read the objects gets no metadata or tags")

# x-minio-force-delete: DeleteObject of a prefix removes every object and version under it.
F = "minio-force"
s3.create_bucket(Bucket=F)
for k in ["dir/a", "dir/b/c", "dirt", "other"]:
    s3.put_object(Bucket=F, Key=k, Body=b"x")
def force(client, bucket, key):
    def add(request, **_):
        request.headers["x-minio-force-delete"] = "true"
    client.meta.events.register_first("before-sign.s3.DeleteObject", add)
    try:
        return code(lambda: client.delete_object(Bucket=bucket, Key=key))
    finally:
        client.meta.events.unregister("before-sign.s3.DeleteObject", add)
# On a presigned URL (made to delete one key) the header rides unsigned: refused, as AWS
# refuses unsigned x-amz-* headers, and nothing is deleted.
url = s3.generate_presigned_url("delete_object", Params={"Bucket": F, "Key": "dir/"})
r = requests.delete(url, headers={"x-minio-force-delete": "true"})
check(r.status_code == 403 and "x-minio-force-delete" in r.text and code(lambda: s3.head_object(Bucket=F, Key="dir/a")) == "OK",
      f"an unsigned x-minio-force-delete on a presigned URL is refused ({r.status_code})")
check(force(s3, F, "dir/") == "OK", "a force delete of dir/")
left = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=F).get("Contents", []))
check(left == ["dirt", "other"], f"removes every key under dir/, nothing else ({left})")
for k in ["logs", "logs/1", "logs/2/3", "logs-archive/keep.gz", "logsheet.xlsx"]:
    s3.put_object(Bucket=F, Key=k, Body=b"x")
check(force(s3, F, "logs") == "OK", "a force delete of logs (no slash)")
left = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=F, Prefix="logs").get("Contents", []))
check(left == ["logs-archive/keep.gz", "logsheet.xlsx"], f"takes logs and logs/..., as MinIO deletes a path ({left})")
# An unsigned caller that may not list learns nothing (no count, no per-prefix answer).
s3.put_bucket_policy(Bucket=F, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
    "Principal": {"AWS": ak2}, "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{F}/public/*"}]}))
anon = make_client(endpoint, "", "", unsigned=True)
check(force(anon, F, "other") == "AccessDenied" and force(anon, F, "nothing-here/") == "AccessDenied",
      "an unsigned force delete without ListBucket is refused whether or not the prefix holds keys")
check(code(lambda: s3.head_object(Bucket=F, Key="other")) == "OK", "and removes nothing")
# A key whose listing is allowed under its home prefix only may force delete there.
s3.put_bucket_policy(Bucket=F, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": ak2}, "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{F}",
     "Condition": {"StringLike": {"s3:prefix": "home/alice/*"}}},
    {"Effect": "Allow", "Principal": {"AWS": ak2}, "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
     "Resource": f"arn:aws:s3:::{F}/home/alice/*"}]}))
alice = make_client(endpoint, ak2, sk2)
for k in ["home/alice/tmp/1", "home/alice/tmp/2", "home/alice/keep"]:
    alice.put_object(Bucket=F, Key=k, Body=b"x")
check(force(alice, F, "home/alice/tmp") == "OK", "a key listing under its home prefix may force delete there")
left = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=F, Prefix="home/").get("Contents", []))
check(left == ["home/alice/keep"], f"and removes just that ({left})")
check(force(alice, F, "other") == "AccessDenied", "but not outside it")
s3.delete_bucket_policy(Bucket=F)
FV = "minio-force-versions"
s3.create_bucket(Bucket=FV)
s3.put_bucket_versioning(Bucket=FV, VersioningConfiguration={"Status": "Enabled"})
for body in [b"1", b"2"]:
    s3.put_object(Bucket=FV, Key="logs/x", Body=body)
s3.delete_object(Bucket=FV, Key="logs/x")
s3.put_object(Bucket=FV, Key="keep", Body=b"k")
check(force(s3, FV, "logs/") == "OK", "a force delete in a versioned bucket")
r = s3.list_object_versions(Bucket=FV)
left = sorted(v["Key"] for v in r.get("Versions", []) + r.get("DeleteMarkers", []))
check(left == ["keep"], f"removes every version and marker under the prefix ({left})")
# Past one round (200 versions, src/s3/minio/force_delete.rs PAGE): a key whose versions
# straddle the round's end loses them all.
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(8) as pool:
    list(pool.map(lambda i: s3.put_object(Bucket=FV, Key=f"big/a{i:04d}", Body=b"x"), range(198)))
for body in [b"1", b"2", b"3"]:
    s3.put_object(Bucket=FV, Key="big/k", Body=body)
check(force(s3, FV, "big/") == "OK", "a force delete of 201 versions")
r = s3.list_object_versions(Bucket=FV, Prefix="big/")
check(not r.get("Versions") and not r.get("DeleteMarkers"), f"leaves none behind ({len(r.get('Versions', []))})")
# Authorized key by key, as DeleteObjects: a Deny on part of the prefix keeps that part.
s3.put_object(Bucket=F, Key="dir/x", Body=b"x")
s3.put_object(Bucket=F, Key="dir/locked/y", Body=b"y")
s3.put_bucket_policy(Bucket=F, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": ak2}, "Action": "s3:DeleteObject", "Resource": f"arn:aws:s3:::{F}/*"},
    {"Effect": "Allow", "Principal": {"AWS": ak2}, "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{F}"},
    {"Effect": "Deny", "Principal": {"AWS": ak2}, "Action": "s3:DeleteObject", "Resource": f"arn:aws:s3:::{F}/dir/locked/*"}]}))
other = make_client(endpoint, ak2, sk2)
check(force(other, F, "dir/") == "AccessDenied", "a force delete over a denied key answers AccessDenied")
left = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=F).get("Contents", []))
check("dir/locked/y" in left and "dir/x" not in left, f"and keeps what the policy denies ({left})")
s3.create_bucket(Bucket="minio-force-lock", ObjectLockEnabledForBucket=True)
check(force(s3, "minio-force-lock", "a/") == "InvalidRequest", "a force delete in an Object Lock bucket is refused")

print("minio_ext: all checks passed")
