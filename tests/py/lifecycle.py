"""Lifecycle rules against a running grids3 whose lifecycle "day" lasts one second
(GRIDS3_LIFECYCLE_DAY_SECS=1), so that expiry is seen in a bounded time: validation,
x-amz-expiration, objects expired by prefix and by tag, incomplete uploads aborted, the rest
kept, and the pass's metrics.

Usage: python lifecycle.py ENDPOINT ACCESS_KEY SECRET_KEY
"""
import sys
import time
import urllib.request

from s3check import check, client as make_client, code

endpoint, ak, sk = sys.argv[1:4]
s3 = make_client(endpoint, ak, sk)
s3.create_bucket(Bucket="lcb")
check(code(lambda: s3.get_bucket_lifecycle_configuration(Bucket="lcb")) == "NoSuchLifecycleConfiguration", "none yet")


def rules(*rs):
    return {"Rules": list(rs)}


# Five "days" (seconds) for tmp/: the HEAD of tmp/a below must come before its expiry on a
# loaded machine too (with 2, expiry came 1-2 s after the PUT, and a slow run lost the race).
expire = {"ID": "tmp", "Status": "Enabled", "Filter": {"Prefix": "tmp/"}, "Expiration": {"Days": 5}}
tagged = {"ID": "tagged", "Status": "Enabled", "Filter": {"Tag": {"Key": "temp", "Value": "yes"}}, "Expiration": {"Days": 2}}
uploads = {"ID": "uploads", "Status": "Enabled", "Filter": {"Prefix": ""}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}}
off = {"ID": "off", "Status": "Disabled", "Filter": {"Prefix": "keep/"}, "Expiration": {"Days": 1}}
for bad, what, want in [
    (rules(expire, dict(expire)), "duplicate rule ids", "InvalidArgument"),
    (rules({**expire, "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]}), "a transition", "InvalidArgument"),
    (rules({**expire, "Expiration": {"Days": 0}}), "zero days", "InvalidArgument"),
    (rules({"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""}}), "a rule without an action", "InvalidArgument"),
]:
    got = code(lambda: s3.put_bucket_lifecycle_configuration(Bucket="lcb", LifecycleConfiguration=bad))
    check(got == want, f"{what}: {want} ({got})")
s3.put_bucket_lifecycle_configuration(Bucket="lcb", LifecycleConfiguration=rules(expire, tagged, uploads, off))
got = s3.get_bucket_lifecycle_configuration(Bucket="lcb")["Rules"]
check([r["ID"] for r in got] == ["tmp", "tagged", "uploads", "off"], "GetBucketLifecycleConfiguration returns the rules")

s3.put_object(Bucket="lcb", Key="tmp/a", Body=b"a")
s3.put_object(Bucket="lcb", Key="tmp/b", Body=b"b1")
s3.put_object(Bucket="lcb", Key="tmp/b", Body=b"b2")
s3.put_object(Bucket="lcb", Key="keep/c", Body=b"c")
s3.put_object(Bucket="lcb", Key="t", Body=b"t", Tagging="temp=yes")
s3.put_object(Bucket="lcb", Key="u", Body=b"u", Tagging="temp=no")
h = s3.head_object(Bucket="lcb", Key="tmp/a")
exp = h["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration", "")
check(exp.startswith('expiry-date="') and exp.endswith('", rule-id="tmp"'), f"x-amz-expiration on HEAD ({exp})")
check("x-amz-expiration" not in s3.head_object(Bucket="lcb", Key="keep/c")["ResponseMetadata"]["HTTPHeaders"],
      "none where no enabled rule applies")
mp = s3.create_multipart_upload(Bucket="lcb", Key="big")

deadline = time.time() + 30
while time.time() < deadline:
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="lcb").get("Contents", []))
    open_uploads = s3.list_multipart_uploads(Bucket="lcb").get("Uploads", [])
    if keys == ["keep/c", "u"] and not open_uploads:
        break
    time.sleep(0.5)
check(keys == ["keep/c", "u"], f"expired by prefix and by tag, the rest kept ({keys})")
check(not open_uploads, "the incomplete upload was aborted")
check(code(lambda: s3.get_object(Bucket="lcb", Key="tmp/b")) == "NoSuchKey", "no older revision resurfaces")
metrics = urllib.request.urlopen(f"{endpoint}/_grids3/metrics").read().decode()
check("grids3_lifecycle_objects_expired_total" in metrics and 'task="lifecycle"' in metrics, "the pass's metrics")

s3.delete_bucket_lifecycle(Bucket="lcb")
check(code(lambda: s3.get_bucket_lifecycle_configuration(Bucket="lcb")) == "NoSuchLifecycleConfiguration",
      "DeleteBucketLifecycle")
# A versioned bucket: Expiration writes a delete marker (no version removed),
# NoncurrentVersionExpiration removes replaced versions, ExpiredObjectDeleteMarker then removes
# a marker that is a key's only version left.
s3.create_bucket(Bucket="lcv")
s3.put_bucket_versioning(Bucket="lcv", VersioningConfiguration={"Status": "Enabled"})
v_old = s3.put_object(Bucket="lcv", Key="n/k", Body=b"old")["VersionId"]
v_new = s3.put_object(Bucket="lcv", Key="n/k", Body=b"new")["VersionId"]
v_cur = s3.put_object(Bucket="lcv", Key="cur/k", Body=b"c")["VersionId"]
s3.put_bucket_lifecycle_configuration(Bucket="lcv", LifecycleConfiguration=rules(
    {"ID": "nc", "Status": "Enabled", "Filter": {"Prefix": "n/"}, "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
    {"ID": "cur", "Status": "Enabled", "Filter": {"Prefix": "cur/"}, "Expiration": {"Days": 1}},
))
deadline = time.time() + 30
while time.time() < deadline:
    r = s3.list_object_versions(Bucket="lcv")
    versions = sorted((v["Key"], v["VersionId"]) for v in r.get("Versions", []))
    markers = [m["Key"] for m in r.get("DeleteMarkers", [])]
    if versions == sorted([("n/k", v_new), ("cur/k", v_cur)]) and markers == ["cur/k"]:
        break
    time.sleep(0.5)
check(versions == sorted([("n/k", v_new), ("cur/k", v_cur)]), f"the noncurrent version was removed, the current kept ({versions})")
check(markers == ["cur/k"], f"Expiration of a versioned object wrote a delete marker ({markers})")
s3.put_bucket_lifecycle_configuration(Bucket="lcv", LifecycleConfiguration=rules(
    {"ID": "nc", "Status": "Enabled", "Filter": {"Prefix": "cur/"}, "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
     "Expiration": {"ExpiredObjectDeleteMarker": True}},
))
deadline = time.time() + 30
while time.time() < deadline:
    r = s3.list_object_versions(Bucket="lcv", Prefix="cur/")
    if not r.get("Versions") and not r.get("DeleteMarkers"):
        break
    time.sleep(0.5)
check(not r.get("Versions") and not r.get("DeleteMarkers"),
      f"the expired version went, then the marker left alone ({r.get('Versions')}, {r.get('DeleteMarkers')})")

print("lifecycle: all checks passed")
