"""Versioning as AWS documents it, against a running grids3, with boto3; and what a GridFS
reader (PyMongo's GridFSBucket) sees of a versioned key.

Usage: python versioning.py ENDPOINT ACCESS_KEY SECRET_KEY MONGODB_URI DATABASE
"""
import sys
import time

import gridfs
import pymongo
from s3check import check, client as make_client, code

endpoint, ak, sk, uri, dbname = sys.argv[1:6]
s3 = make_client(endpoint, ak, sk)
db = pymongo.MongoClient(uri)[dbname]


def err(fn):
    """(code, status, headers) of a failing call; ("OK", status, headers) otherwise."""
    try:
        r = fn()
        return "OK", r["ResponseMetadata"]["HTTPStatusCode"], r["ResponseMetadata"]["HTTPHeaders"]
    except Exception as e:  # botocore.exceptions.ClientError
        md = e.response["ResponseMetadata"]
        return e.response["Error"]["Code"], md["HTTPStatusCode"], md.get("HTTPHeaders", {})


# 1. States: none, Enabled, Suspended; MFA Delete refused.
B = "ver"
s3.create_bucket(Bucket=B)
s3.put_object(Bucket=B, Key="old", Body=b"before versioning")
check("Status" not in s3.get_bucket_versioning(Bucket=B), "a new bucket has no versioning status")
c, st, _ = err(lambda: s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"}))
check(c == "NotImplemented" and st == 501, f"MFA Delete is refused ({c} {st})")
check("Status" not in s3.get_bucket_versioning(Bucket=B), "a refused configuration changes nothing")
check(code(lambda: s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Sometimes"})) == "MalformedXML",
      "an unknown status is MalformedXML")
some_id = "0" * 13 + "a" * 24
c, st, _ = err(lambda: s3.delete_object(Bucket=B, Key="old", VersionId=some_id))
check((c, st) == ("InvalidArgument", 400), f"DELETE of a version id in an unversioned bucket: 400 ({c} {st})")
check(s3.get_object(Bucket=B, Key="old")["Body"].read() == b"before versioning", "and the object stays")
check(code(lambda: s3.get_object(Bucket=B, Key="old", VersionId=some_id)) == "InvalidArgument",
      "GET of a version id in an unversioned bucket: InvalidArgument")
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
check(s3.get_bucket_versioning(Bucket=B)["Status"] == "Enabled", "GetBucketVersioning: Enabled")

# An object from before versioning is the null version.
h = s3.head_object(Bucket=B, Key="old")
check(h.get("VersionId") == "null", f"a pre-versioning object is the null version ({h.get('VersionId')})")

# 2./3. Every PUT is a version; GET by id; the latest is current.
ids = []
for i in range(3):
    r = s3.put_object(Bucket=B, Key="k", Body=f"v{i}".encode())
    ids.append(r["VersionId"])
check(len(set(ids)) == 3 and all(v and v != "null" for v in ids), "three PUTs made three distinct version ids")
check(s3.get_object(Bucket=B, Key="k")["Body"].read() == b"v2", "GET returns the latest version")
for i, v in enumerate(ids):
    g = s3.get_object(Bucket=B, Key="k", VersionId=v)
    check(g["Body"].read() == f"v{i}".encode() and g["VersionId"] == v, f"GET ?versionId= returns version {i}")
check(s3.head_object(Bucket=B, Key="k", VersionId=ids[0])["ContentLength"] == 2, "HEAD ?versionId=")
c, st, _ = err(lambda: s3.get_object(Bucket=B, Key="k", VersionId="nonsense"))
check((c, st) == ("InvalidArgument", 400), f"a malformed version id is InvalidArgument ({c} {st})")
bogus = "0" * 13 + "f" * 24
c, st, _ = err(lambda: s3.get_object(Bucket=B, Key="k", VersionId=bogus))
check((c, st) == ("NoSuchVersion", 404), f"an unknown version id is NoSuchVersion ({c} {st})")

# A GridFS reader sees the versions as revisions, in order.
fs = gridfs.GridFSBucket(db, bucket_name=B)
check(fs.open_download_stream_by_name("k").read() == b"v2", "PyMongo: the newest revision is the latest version")
check(fs.open_download_stream_by_name("k", revision=-2).read() == b"v1", "PyMongo: revision=-2 is the previous version")
check(fs.open_download_stream_by_name("k", revision=0).read() == b"v0", "PyMongo: revision=0 is the first version")

# Delete without a version: a delete marker; GET 404 with x-amz-delete-marker; GET of the
# marker's version 405; older versions stay readable.
d = s3.delete_object(Bucket=B, Key="k")
marker = d.get("VersionId")
check(d.get("DeleteMarker") is True and marker and marker not in ids, "DELETE writes a delete marker")
c, st, hd = err(lambda: s3.get_object(Bucket=B, Key="k"))
check((c, st) == ("NoSuchKey", 404) and hd.get("x-amz-delete-marker") == "true" and hd.get("x-amz-version-id") == marker,
      f"GET of a deleted key: 404 with x-amz-delete-marker ({c} {st} {hd.get('x-amz-delete-marker')})")
c, st, hd = err(lambda: s3.get_object(Bucket=B, Key="k", VersionId=marker))
check(st == 405 and hd.get("x-amz-delete-marker") == "true", f"GET of a delete marker's version: 405 ({c} {st})")
check(s3.get_object(Bucket=B, Key="k", VersionId=ids[1])["Body"].read() == b"v1", "older versions stay after a delete marker")
check(not any(o["Key"] == "k" for o in s3.list_objects_v2(Bucket=B).get("Contents", [])), "a deleted key is not listed")
check(fs.open_download_stream_by_name("k").read() == b"v2", "a delete marker is no GridFS revision")

# ListObjectVersions: versions newest first, the marker latest.
r = s3.list_object_versions(Bucket=B, Prefix="k")
vs = [(v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])]
ms = [(m["VersionId"], m["IsLatest"]) for m in r.get("DeleteMarkers", [])]
check(vs == [(ids[2], False), (ids[1], False), (ids[0], False)], f"ListObjectVersions lists the versions newest first ({vs})")
check(ms == [(marker, True)], f"and the delete marker as the latest ({ms})")

# Deleting the marker brings the object back; deleting the latest version makes the previous
# one current.
d = s3.delete_object(Bucket=B, Key="k", VersionId=marker)
check(d.get("DeleteMarker") is True and d.get("VersionId") == marker, "DELETE ?versionId= of the marker removes it")
check(s3.get_object(Bucket=B, Key="k")["Body"].read() == b"v2", "the key is back at its latest version")
d = s3.delete_object(Bucket=B, Key="k", VersionId=ids[2])
check(d.get("VersionId") == ids[2] and not d.get("DeleteMarker"), "DELETE ?versionId= of the latest version")
check(s3.get_object(Bucket=B, Key="k")["Body"].read() == b"v1", "the previous version becomes current")
check(code(lambda: s3.get_object(Bucket=B, Key="k", VersionId=ids[2])) == "NoSuchVersion", "a deleted version is gone")
check(fs.open_download_stream_by_name("k").read() == b"v1", "PyMongo: its revision is gone too")

# Paging: key-marker and version-id-marker, max-keys, delimiter.
for i in range(3):
    s3.put_object(Bucket=B, Key=f"dir/a{i}", Body=b"x")
    s3.put_object(Bucket=B, Key=f"dir/a{i}", Body=b"yy")
seen, km, vm = [], None, None
while True:
    kw = {"Bucket": B, "Prefix": "dir/", "MaxKeys": 2}
    if km:
        kw["KeyMarker"] = km
        kw["VersionIdMarker"] = vm
    r = s3.list_object_versions(**kw)
    seen += [(v["Key"], v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])]
    if not r["IsTruncated"]:
        break
    km, vm = r["NextKeyMarker"], r["NextVersionIdMarker"]
check(len(seen) == 6 and len(set(seen)) == 6, f"paging with max-keys=2 lists all 6 versions once ({len(seen)})")
check([k for k, _, latest in seen if latest] == ["dir/a0", "dir/a1", "dir/a2"], "IsLatest once per key across pages")
r = s3.list_object_versions(Bucket=B, Delimiter="/")
check([p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["dir/"], "delimiter rolls versions up into common prefixes")
r = s3.list_object_versions(Bucket=B, Prefix="dir/", EncodingType="url", MaxKeys=1)
check(r["IsTruncated"] and r["NextKeyMarker"] == "dir/a0" and r.get("EncodingType") == "url", f"encoding-type=url ({r.get('NextKeyMarker')})")

# Suspended: writes replace the null version; other versions stay.
S = "ver-susp"
s3.create_bucket(Bucket=S)
s3.put_bucket_versioning(Bucket=S, VersioningConfiguration={"Status": "Enabled"})
v1 = s3.put_object(Bucket=S, Key="k", Body=b"one")["VersionId"]
s3.put_bucket_versioning(Bucket=S, VersioningConfiguration={"Status": "Suspended"})
check(s3.get_bucket_versioning(Bucket=S)["Status"] == "Suspended", "GetBucketVersioning: Suspended")
r = s3.put_object(Bucket=S, Key="k", Body=b"two")
# Issue 40: the answer names no version in a suspended bucket; HEAD names the null one.
check(r.get("VersionId") is None and s3.head_object(Bucket=S, Key="k").get("VersionId") == "null",
      f"a PUT while suspended writes the null version ({r.get('VersionId')})")
s3.put_object(Bucket=S, Key="k", Body=b"three")
r = s3.list_object_versions(Bucket=S)
vs = [(v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])]
check(vs == [("null", True), (v1, False)], f"the null version was replaced, the older version stays ({vs})")
check(s3.get_object(Bucket=S, Key="k", VersionId="null")["Body"].read() == b"three", "GET ?versionId=null")
d = s3.delete_object(Bucket=S, Key="k")
check(d.get("DeleteMarker") is True and d.get("VersionId") == "null", "a DELETE while suspended writes a null marker")
r = s3.list_object_versions(Bucket=S)
check([v["VersionId"] for v in r.get("Versions", [])] == [v1] and [m["VersionId"] for m in r.get("DeleteMarkers", [])] == ["null"],
      "the null marker replaced the null version")

# Multipart, copy (with a source version), tagging by version, attributes.
up = s3.create_multipart_upload(Bucket=B, Key="mp")
p1 = s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"m" * (5 * 1024 * 1024))
done = s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"],
                                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}]})
check(done.get("VersionId") not in (None, "null"), "CompleteMultipartUpload returns a version id")
again = s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"],
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}]})
check(again.get("VersionId") == done["VersionId"], "a repeated CompleteMultipartUpload answers the same version")
check(len([v for v in s3.list_object_versions(Bucket=B, Prefix="mp").get("Versions", []) if v["Key"] == "mp"]) == 1,
      "and adds none")
c = s3.copy_object(Bucket=B, Key="k-copy", CopySource={"Bucket": B, "Key": "k", "VersionId": ids[0]})
check(c.get("CopySourceVersionId") == ids[0] and c.get("VersionId"), "CopyObject from a named source version")
check(s3.get_object(Bucket=B, Key="k-copy")["Body"].read() == b"v0", "the copy has that version's bytes")
c = s3.copy_object(Bucket=B, Key="k", CopySource={"Bucket": B, "Key": "k", "VersionId": ids[0]})
check(s3.get_object(Bucket=B, Key="k")["Body"].read() == b"v0", "copying an old version onto its key restores it")
s3.put_object_tagging(Bucket=B, Key="k", VersionId=ids[1], Tagging={"TagSet": [{"Key": "t", "Value": "1"}]})
check(s3.get_object_tagging(Bucket=B, Key="k", VersionId=ids[1])["TagSet"] == [{"Key": "t", "Value": "1"}],
      "tags of a named version")
check(s3.get_object_tagging(Bucket=B, Key="k")["TagSet"] == [], "the current version's tags are its own")
check(len(s3.get_object_acl(Bucket=B, Key="k", VersionId=ids[1])["Grants"]) >= 1, "GetObjectAcl ?versionId=")
check(code(lambda: s3.get_object_acl(Bucket=B, Key="k", VersionId=bogus)) == "NoSuchVersion",
      "GetObjectAcl of an unknown version")
a = s3.get_object_attributes(Bucket=B, Key="k", VersionId=ids[1], ObjectAttributes=["ObjectSize"])
check(a["ObjectSize"] == 2 and a.get("VersionId") == ids[1], "GetObjectAttributes ?versionId=")
upc = s3.create_multipart_upload(Bucket=B, Key="mpc")
pc = s3.upload_part_copy(Bucket=B, Key="mpc", UploadId=upc["UploadId"], PartNumber=1,
                         CopySource={"Bucket": B, "Key": "k", "VersionId": ids[1]})
check(pc.get("CopySourceVersionId") == ids[1], "UploadPartCopy from a named source version")
s3.abort_multipart_upload(Bucket=B, Key="mpc", UploadId=upc["UploadId"])

# Conditional writes in a versioned bucket.
etag = s3.head_object(Bucket=B, Key="k")["ETag"]
check(code(lambda: s3.put_object(Bucket=B, Key="k", Body=b"z", IfNoneMatch="*")) == "PreconditionFailed",
      "If-None-Match: * on a key with a current version")
check(code(lambda: s3.put_object(Bucket=B, Key="k", Body=b"z", IfMatch=etag)) == "OK", "If-Match the current ETag")

# 4. Conditional deletes: If-Match, x-amz-if-match-size, x-amz-if-match-last-modified-time.
P = "ver-cond"
s3.create_bucket(Bucket=P)
s3.put_object(Bucket=P, Key="c", Body=b"12345")
h = s3.head_object(Bucket=P, Key="c")
c, st, _ = err(lambda: s3.delete_object(Bucket=P, Key="c", IfMatch='"0123"'))
check((c, st) == ("PreconditionFailed", 412), f"DeleteObject If-Match mismatch: 412 ({c} {st})")
c, st, _ = err(lambda: s3.delete_object(Bucket=P, Key="c", IfMatchSize=4))
check((c, st) == ("PreconditionFailed", 412), f"DeleteObject x-amz-if-match-size mismatch: 412 ({c} {st})")
c, st, _ = err(lambda: s3.delete_object(Bucket=P, Key="c", IfMatchLastModifiedTime=h["LastModified"].replace(year=2001)))
check((c, st) == ("PreconditionFailed", 412), f"DeleteObject x-amz-if-match-last-modified-time mismatch: 412 ({c} {st})")
check(s3.get_object(Bucket=P, Key="c")["Body"].read() == b"12345", "nothing was deleted")
c, st, _ = err(lambda: s3.delete_object(Bucket=P, Key="c", IfMatch=h["ETag"], IfMatchSize=5,
                                        IfMatchLastModifiedTime=h["LastModified"]))
check(st == 204, f"a delete whose conditions all hold: 204 ({c} {st})")
check(code(lambda: s3.head_object(Bucket=P, Key="c")) == "404", "it was deleted")
c, st, _ = err(lambda: s3.delete_object(Bucket=P, Key="c", IfMatch="*"))
check((c, st) == ("NoSuchKey", 404), f"If-Match on a missing key: 404 NoSuchKey ({c} {st})")
s3.put_object(Bucket=P, Key="d1", Body=b"a")
s3.put_object(Bucket=P, Key="d2", Body=b"bb")
e1 = s3.head_object(Bucket=P, Key="d1")["ETag"]
r = s3.delete_objects(Bucket=P, Delete={"Objects": [{"Key": "d1", "ETag": e1}, {"Key": "d2", "ETag": '"nope"'}]})
check([d["Key"] for d in r.get("Deleted", [])] == ["d1"] and [(e["Key"], e["Code"]) for e in r.get("Errors", [])] == [("d2", "PreconditionFailed")],
      f"DeleteObjects with ETag per key ({r.get('Deleted')}, {r.get('Errors')})")
# Conditions on a named version.
vk = s3.put_object(Bucket=B, Key="cv", Body=b"abc")["VersionId"]
s3.put_object(Bucket=B, Key="cv", Body=b"abcd")
check(code(lambda: s3.delete_object(Bucket=B, Key="cv", VersionId=vk, IfMatchSize=4)) == "PreconditionFailed",
      "a condition on a named version is checked against that version")
check(code(lambda: s3.delete_object(Bucket=B, Key="cv", VersionId=vk, IfMatchSize=3)) == "OK", "and holds when it matches")

# DeleteObjects with versions and markers.
r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "dir/a0"}, {"Key": "dir/a1", "VersionId": seen[2][1]}]})
dd = {d["Key"]: d for d in r.get("Deleted", [])}
check(dd["dir/a0"].get("DeleteMarker") is True and dd["dir/a0"].get("DeleteMarkerVersionId"),
      "DeleteObjects without a version reports DeleteMarker and DeleteMarkerVersionId")
check(dd["dir/a1"].get("VersionId") == seen[2][1], "DeleteObjects with a VersionId removes that version")
check(code(lambda: s3.get_object(Bucket=B, Key="dir/a1", VersionId=seen[2][1])) == "NoSuchVersion", "it is gone")

# A versioned bucket with versions or markers is not empty.
check(code(lambda: s3.delete_bucket(Bucket=S)) == "BucketNotEmpty", "a bucket with only a delete marker is not empty")

# 6. A foreign GridFS bucket with several revisions: they appear as versions, with stable ids.
F = "ver-foreign"
ffs = gridfs.GridFSBucket(db, bucket_name=F)
for body in (b"r0", b"r1", b"r2"):
    ffs.upload_from_stream("doc.txt", body)
    time.sleep(0.01)
s3.create_bucket(Bucket=F) if code(lambda: s3.head_bucket(Bucket=F)) != "OK" else None
s3.put_bucket_versioning(Bucket=F, VersioningConfiguration={"Status": "Enabled"})
r = s3.list_object_versions(Bucket=F)
fv = [(v["VersionId"], v["IsLatest"], v["Size"]) for v in r.get("Versions", [])]
check(len(fv) == 3 and fv[0][0] == "null" and fv[0][1] and not fv[1][1], f"foreign revisions appear as versions ({fv})")
check(s3.get_object(Bucket=F, Key="doc.txt", VersionId=fv[2][0])["Body"].read() == b"r0", "the oldest revision by its version id")
again = [v["VersionId"] for v in s3.list_object_versions(Bucket=F).get("Versions", [])]
check(again == [v[0] for v in fv], "their version ids are stable")

# 5. Object Lock.
import datetime
L = "ver-lock"
s3.create_bucket(Bucket=L, ObjectLockEnabledForBucket=True)
check(s3.get_bucket_versioning(Bucket=L)["Status"] == "Enabled", "a bucket created with Object Lock is versioned")
c = s3.get_object_lock_configuration(Bucket=L)["ObjectLockConfiguration"]
check(c["ObjectLockEnabled"] == "Enabled" and "Rule" not in c, f"GetObjectLockConfiguration ({c})")
c, st, _ = err(lambda: s3.put_bucket_versioning(Bucket=L, VersioningConfiguration={"Status": "Suspended"}))
check((c, st) == ("InvalidBucketState", 409), f"versioning cannot be suspended under Object Lock ({c} {st})")
c, st, _ = err(lambda: s3.put_object(Bucket=B, Key="locked", Body=b"x", ObjectLockLegalHoldStatus="ON"))
check((c, st) == ("InvalidRequest", 400), f"lock headers on a bucket without Object Lock: 400 ({c} {st})")
c, st, _ = err(lambda: s3.get_object_lock_configuration(Bucket=B))
check((c, st) == ("ObjectLockConfigurationNotFoundError", 404), f"no Object Lock configuration: 404 ({c} {st})")
c, st, _ = err(lambda: s3.put_object_lock_configuration(Bucket=S, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"}))
check((c, st) == ("InvalidBucketState", 409), f"Object Lock on a suspended bucket: 409 ({c} {st})")

def soon(secs=600):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=secs)


far = soon(86400)
gov = s3.put_object(Bucket=L, Key="g", Body=b"gov", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=far)["VersionId"]
comp = s3.put_object(Bucket=L, Key="c", Body=b"comp", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=far)["VersionId"]
hold = s3.put_object(Bucket=L, Key="h", Body=b"hold", ObjectLockLegalHoldStatus="ON")["VersionId"]
r = s3.get_object_retention(Bucket=L, Key="g", VersionId=gov)["Retention"]
check(r["Mode"] == "GOVERNANCE" and abs((r["RetainUntilDate"] - far).total_seconds()) < 2, f"GetObjectRetention ({r})")
check(s3.get_object_legal_hold(Bucket=L, Key="h", VersionId=hold)["LegalHold"]["Status"] == "ON", "GetObjectLegalHold")
h = s3.head_object(Bucket=L, Key="g")
check(h.get("ObjectLockMode") == "GOVERNANCE", f"HEAD shows the lock mode ({h.get('ObjectLockMode')})")
for key, vid, what in [("g", gov, "GOVERNANCE"), ("c", comp, "COMPLIANCE"), ("h", hold, "a legal hold")]:
    c, st, _ = err(lambda: s3.delete_object(Bucket=L, Key=key, VersionId=vid))
    check((c, st) == ("AccessDenied", 403), f"DeleteObject of a version under {what}: 403 ({c} {st})")
r = s3.delete_objects(Bucket=L, Delete={"Objects": [{"Key": "g", "VersionId": gov}]})
check([(e["Code"], e.get("Key"), e.get("VersionId")) for e in r.get("Errors", [])] == [("AccessDenied", "g", gov)],
      f"DeleteObjects of a locked version: AccessDenied, with its key and version id ({r.get('Errors')})")
d = s3.delete_object(Bucket=L, Key="g")
check(d.get("DeleteMarker") is True, "a delete marker may be written over a locked version")
check(s3.get_object(Bucket=L, Key="g", VersionId=gov)["Body"].read() == b"gov", "the locked version stays")
c, st, _ = err(lambda: s3.put_object_retention(Bucket=L, Key="c", VersionId=comp,
                                               Retention={"Mode": "GOVERNANCE", "RetainUntilDate": far}))
check((c, st) == ("AccessDenied", 403), f"COMPLIANCE cannot be weakened ({c} {st})")
c, st, _ = err(lambda: s3.put_object_retention(Bucket=L, Key="g", VersionId=gov,
                                               Retention={"Mode": "GOVERNANCE", "RetainUntilDate": soon()}))
check((c, st) == ("AccessDenied", 403), f"GOVERNANCE cannot be shortened without a bypass ({c} {st})")
g2 = s3.put_object(Bucket=L, Key="g2", Body=b"g2", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=far)["VersionId"]
c, st, _ = err(lambda: s3.put_object_retention(Bucket=L, Key="g2", VersionId=g2,
                                               Retention={"Mode": "COMPLIANCE", "RetainUntilDate": far}))
check((c, st) == ("AccessDenied", 403), f"GOVERNANCE becomes COMPLIANCE only with a bypass ({c} {st})")
s3.put_object_retention(Bucket=L, Key="g2", VersionId=g2, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": far},
                        BypassGovernanceRetention=True)
r = s3.get_object_retention(Bucket=L, Key="g2", VersionId=g2)["Retention"]
check(r["Mode"] == "COMPLIANCE", f"with a bypass by the owner it does ({r})")
s3.put_object_retention(Bucket=L, Key="g", VersionId=gov, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": soon()},
                        BypassGovernanceRetention=True)
check(code(lambda: s3.delete_object(Bucket=L, Key="g", VersionId=gov, BypassGovernanceRetention=True)) == "OK",
      "a GOVERNANCE version is deleted with a bypass by the owner")
s3.put_object_legal_hold(Bucket=L, Key="h", VersionId=hold, LegalHold={"Status": "OFF"})
check(code(lambda: s3.delete_object(Bucket=L, Key="h", VersionId=hold)) == "OK", "after the legal hold is lifted it can go")
# Far enough ahead that the PUT reaches the gateway before it on a loaded machine.
until = soon(5)
short = s3.put_object(Bucket=L, Key="s", Body=b"s", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)["VersionId"]
time.sleep(max(0.0, (until - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) + 1)
check(code(lambda: s3.delete_object(Bucket=L, Key="s", VersionId=short)) == "OK", "an expired COMPLIANCE retention no longer holds")
check(code(lambda: s3.delete_object(Bucket=L, Key="c", VersionId=comp)) == "AccessDenied", "a COMPLIANCE retention in force still holds")
s3.put_object_lock_configuration(Bucket=L, ObjectLockConfiguration={
    "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1}}})
dv = s3.put_object(Bucket=L, Key="d", Body=b"default")["VersionId"]
r = s3.get_object_retention(Bucket=L, Key="d", VersionId=dv)["Retention"]
check(r["Mode"] == "COMPLIANCE", f"the default retention applies to new versions ({r})")
up = s3.create_multipart_upload(Bucket=L, Key="mpl", ObjectLockLegalHoldStatus="ON")
p1 = s3.upload_part(Bucket=L, Key="mpl", UploadId=up["UploadId"], PartNumber=1, Body=b"x")
mv = s3.complete_multipart_upload(Bucket=L, Key="mpl", UploadId=up["UploadId"],
                                  MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}]})["VersionId"]
check(s3.get_object_legal_hold(Bucket=L, Key="mpl", VersionId=mv)["LegalHold"]["Status"] == "ON",
      "CreateMultipartUpload's lock headers reach the object")
cv = s3.copy_object(Bucket=L, Key="cp", CopySource={"Bucket": L, "Key": "mpl"}, ObjectLockLegalHoldStatus="ON")["VersionId"]
check(s3.get_object_legal_hold(Bucket=L, Key="cp", VersionId=cv)["LegalHold"]["Status"] == "ON", "CopyObject's lock headers")

print("versioning: all checks passed")
