"""Bucket policies against a running grids3, with three principals: the root key, a second
key, and unsigned requests (boto3 UNSIGNED and curl), plus one awscli put-bucket-policy round
trip.

Usage: python policy.py ENDPOINT ACCESS_KEY SECRET_KEY SECOND_ACCESS_KEY SECOND_SECRET_KEY
"""
import json
import os
import subprocess
import sys

from s3check import check, client as make_client, code, curl, tmp

endpoint, ak, sk, ak2, sk2 = sys.argv[1:6]


def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


root = make_client(endpoint, ak, sk)
other = make_client(endpoint, ak2, sk2)
anon = make_client(endpoint, "x", "x", unsigned=True)

root.create_bucket(Bucket="site", ObjectOwnership="ObjectWriter")
for k in ["public/index.html", "public/logo.png", "private/notes.txt", "reports/q1.csv", "reports/q2.csv",
          "tagged/open.txt", "tagged/closed.txt"]:
    root.put_object(Bucket="site", Key=k, Body=f"body of {k}".encode())
root.put_object_tagging(Bucket="site", Key="tagged/open.txt", Tagging={"TagSet": [{"Key": "class", "Value": "open"}]})

# Validation, as AWS does it.
check(code(lambda: root.get_bucket_policy(Bucket="site")) == "NoSuchBucketPolicy", "no policy yet")
for bad, what in [
    ("{not json", "invalid JSON"),
    (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:Fly", "Resource": "arn:aws:s3:::site/*"}), "an unknown action"),
    (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::elsewhere/*"}), "another bucket's resource"),
    (policy({"Effect": "Allow", "Principal": {"AWS": "nobody"}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::site/*"}), "an unknown principal"),
    (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::site/*", "Sid": "x" * 21000}), "over 20 KiB"),
]:
    check(code(lambda: root.put_bucket_policy(Bucket="site", Policy=bad)) == "MalformedPolicy", f"MalformedPolicy for {what}")

# A public-read prefix: anyone reads public/*, nothing else.
public_prefix = policy({"Sid": "PublicRead", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                        "Resource": "arn:aws:s3:::site/public/*"})
root.put_bucket_policy(Bucket="site", Policy=public_prefix)
check(json.loads(root.get_bucket_policy(Bucket="site")["Policy"]) == json.loads(public_prefix), "GetBucketPolicy returns it")
check(root.get_bucket_policy_status(Bucket="site")["PolicyStatus"]["IsPublic"] is True, "GetBucketPolicyStatus: public")
check(anon.get_object(Bucket="site", Key="public/index.html")["Body"].read() == b"body of public/index.html",
      "unsigned boto3 reads under the public prefix")
check(curl(f"{endpoint}/site/public/logo.png")[0] == 200, "and so does curl")
check(curl(f"{endpoint}/site/private/notes.txt")[0] == 403, "but not elsewhere")
check(curl(f"{endpoint}/site/public/missing")[0] == 403, "a missing key is 403 to whoever may not list")
check(code(lambda: anon.list_objects_v2(Bucket="site")) == "AccessDenied", "nor list")
check(code(lambda: anon.put_object(Bucket="site", Key="public/x", Body=b"x")) == "AccessDenied", "nor write")
check(other.get_object(Bucket="site", Key="public/logo.png")["Body"].read() == b"body of public/logo.png",
      "another key reads it too")

# A read-only key for one prefix, by IAM user ARN, plus a tag-gated read and a deny by IP.
read_only = policy(
    {"Sid": "ListReports", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::123456789012:user/{ak2}"},
     "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::site",
     "Condition": {"StringLike": {"s3:prefix": ["reports/", "reports/*"]}}},
    {"Sid": "ReadReports", "Effect": "Allow", "Principal": {"AWS": ak2},
     "Action": "s3:GetObject", "Resource": "arn:aws:s3:::site/reports/*"},
    {"Sid": "OpenTagged", "Effect": "Allow", "Principal": {"AWS": ak2},
     "Action": "s3:GetObject", "Resource": "arn:aws:s3:::site/tagged/*",
     "Condition": {"StringEquals": {"s3:ExistingObjectTag/class": "open"}}},
    {"Sid": "NoDeletesFromElsewhere", "Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
     "Resource": "arn:aws:s3:::site/*", "Condition": {"NotIpAddress": {"aws:SourceIp": "10.0.0.0/8"}}},
)
root.put_bucket_policy(Bucket="site", Policy=read_only)
check(root.get_bucket_policy_status(Bucket="site")["PolicyStatus"]["IsPublic"] is False, "GetBucketPolicyStatus: not public")
check(code(lambda: anon.get_object(Bucket="site", Key="public/index.html")) == "AccessDenied",
      "the new policy replaced the public one")
keys = [o["Key"] for o in other.list_objects_v2(Bucket="site", Prefix="reports/")["Contents"]]
check(keys == ["reports/q1.csv", "reports/q2.csv"], "the key lists its prefix")
check(code(lambda: other.list_objects_v2(Bucket="site")) == "AccessDenied", "but not the whole bucket")
check(code(lambda: other.list_objects_v2(Bucket="site", Prefix="private/")) == "AccessDenied", "nor another prefix")
check(other.get_object(Bucket="site", Key="reports/q1.csv")["Body"].read() == b"body of reports/q1.csv", "reads in its prefix")
# Issue 28 item 5: a caller who may list where the key is (here by an s3:prefix condition the
# key matches) learns nothing new from a 404; elsewhere a missing key stays 403.
check(code(lambda: other.get_object(Bucket="site", Key="reports/none.csv")) == "NoSuchKey",
      "a missing key under the listable prefix is 404")
check(code(lambda: other.head_object(Bucket="site", Key="reports/none.csv")) == "404",
      "and so is its HEAD")
check(code(lambda: other.get_object(Bucket="site", Key="private/none.csv")) == "AccessDenied",
      "a missing key outside it is 403")
check(code(lambda: other.get_object(Bucket="site", Key="private/notes.txt")) == "AccessDenied", "not outside it")
check(code(lambda: other.put_object(Bucket="site", Key="reports/q3.csv", Body=b"x")) == "AccessDenied", "and writes nothing")
check(other.get_object(Bucket="site", Key="tagged/open.txt")["Body"].read() == b"body of tagged/open.txt",
      "s3:ExistingObjectTag allows the tagged object")
check(code(lambda: other.get_object(Bucket="site", Key="tagged/closed.txt")) == "AccessDenied", "and not the untagged one")
# An explicit Deny beats an ACL grant: with WRITE granted, the key writes but deletes nothing
# from outside 10.0.0.0/8.
other_id = other.list_buckets()["Owner"]["ID"]
root.put_bucket_acl(Bucket="site", GrantWrite=f'id="{other_id}"')
other.put_object(Bucket="site", Key="reports/q3.csv", Body=b"q3")
check(code(lambda: other.delete_object(Bucket="site", Key="reports/q3.csv")) == "AccessDenied",
      "DeleteObject denied by aws:SourceIp despite the WRITE grant")
# Issue 28 item 5: the Deny binds the root key too, as a bucket policy's Deny binds AWS's
# account root user (it used to pass); the policy itself stays the root key's to change.
check(code(lambda: root.delete_object(Bucket="site", Key="reports/q2.csv")) == "AccessDenied",
      "the explicit Deny binds the root key too")
check("NoDeletesFromElsewhere" in root.get_bucket_policy(Bucket="site")["Policy"], "but it still reads the policy")

# A bucket the second key owns: its own Deny binds it, but never locks it out of the policy.
other.create_bucket(Bucket="theirs")
other.put_object(Bucket="theirs", Key="keep/a", Body=b"a")
other.put_object(Bucket="theirs", Key="free/b", Body=b"b")
other.put_bucket_policy(Bucket="theirs", Policy=policy(
    {"Effect": "Deny", "Principal": "*", "Action": ["s3:DeleteObject", "s3:PutBucketPolicy", "s3:GetBucketPolicy"],
     "Resource": ["arn:aws:s3:::theirs", "arn:aws:s3:::theirs/keep/*"]}))
r = other.delete_objects(Bucket="theirs", Delete={"Objects": [{"Key": "keep/a"}, {"Key": "free/b"}]})
check([d["Key"] for d in r.get("Deleted", [])] == ["free/b"] and [e["Key"] for e in r.get("Errors", [])] == ["keep/a"]
      and r["Errors"][0]["Code"] == "AccessDenied", "DeleteObjects decides each key")
check(code(lambda: other.delete_object(Bucket="theirs", Key="keep/a")) == "AccessDenied", "the owner is bound by Deny")
check("Deny" in other.get_bucket_policy(Bucket="theirs")["Policy"], "but may still read its policy")
other.delete_bucket_policy(Bucket="theirs")
other.delete_object(Bucket="theirs", Key="keep/a")
check(code(lambda: other.get_bucket_policy(Bucket="theirs")) == "NoSuchBucketPolicy", "and delete it")
check(code(lambda: other.put_bucket_policy(Bucket="site", Policy=public_prefix)) == "AccessDenied",
      "a key that does not own a bucket may not set its policy")

# awscli: put-bucket-policy from a file, get-bucket-policy back.
env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk, AWS_DEFAULT_REGION="us-east-1")
aws = [os.path.join(os.path.dirname(sys.executable), "aws"), "--endpoint-url", endpoint]
path = os.path.join(tmp, "policy.json")
with open(path, "w") as f:
    f.write(public_prefix)
out = subprocess.run(aws + ["s3api", "put-bucket-policy", "--bucket", "site", "--policy", f"file://{path}"],
                     capture_output=True, text=True, env=env)
check(out.returncode == 0, f"awscli put-bucket-policy ({out.stderr.strip()})")
out = subprocess.run(aws + ["s3api", "get-bucket-policy", "--bucket", "site", "--query", "Policy", "--output", "text"],
                     capture_output=True, text=True, env=env)
check(out.returncode == 0 and json.loads(out.stdout) == json.loads(public_prefix), "awscli get-bucket-policy")
check(curl(f"{endpoint}/site/public/index.html")[0] == 200, "the policy awscli put is in force")

# Block Public Access, setting by setting.
root.create_bucket(Bucket="pab", ObjectOwnership="ObjectWriter")
root.put_object(Bucket="pab", Key="open.txt", Body=b"open", ACL="public-read")
check(anon.get_object(Bucket="pab", Key="open.txt")["Body"].read() == b"open", "a public-read object before any block")
check(code(lambda: root.get_public_access_block(Bucket="pab")) == "NoSuchPublicAccessBlockConfiguration",
      "no configuration yet")
root.put_public_access_block(Bucket="pab", PublicAccessBlockConfiguration={"IgnorePublicAcls": True})
got = root.get_public_access_block(Bucket="pab")["PublicAccessBlockConfiguration"]
check(got == {"BlockPublicAcls": False, "IgnorePublicAcls": True, "BlockPublicPolicy": False,
              "RestrictPublicBuckets": False}, f"GetPublicAccessBlock ({got})")
check(code(lambda: anon.get_object(Bucket="pab", Key="open.txt")) == "AccessDenied", "IgnorePublicAcls: the grant grants nothing")
root.put_public_access_block(Bucket="pab", PublicAccessBlockConfiguration={"BlockPublicAcls": True})
check(anon.get_object(Bucket="pab", Key="open.txt")["Body"].read() == b"open", "without IgnorePublicAcls it counts again")
check(code(lambda: root.put_object(Bucket="pab", Key="p2", Body=b"x", ACL="public-read")) == "AccessDenied",
      "BlockPublicAcls refuses a public canned ACL")
check(code(lambda: root.put_object_acl(Bucket="pab", Key="open.txt", ACL="authenticated-read")) == "AccessDenied",
      "and a public PutObjectAcl")
root.put_object(Bucket="pab", Key="p3", Body=b"x", ACL="private")
public_pab = policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::pab/*"})
root.put_public_access_block(Bucket="pab", PublicAccessBlockConfiguration={"BlockPublicPolicy": True})
check(code(lambda: root.put_bucket_policy(Bucket="pab", Policy=public_pab)) == "AccessDenied",
      "BlockPublicPolicy refuses a public policy")
root.delete_public_access_block(Bucket="pab")
root.put_bucket_policy(Bucket="pab", Policy=public_pab)
check(anon.get_object(Bucket="pab", Key="p3")["Body"].read() == b"x", "the public policy lets anyone read")
root.put_public_access_block(Bucket="pab", PublicAccessBlockConfiguration={"RestrictPublicBuckets": True})
check(code(lambda: anon.get_object(Bucket="pab", Key="p3")) == "AccessDenied", "RestrictPublicBuckets: not unsigned requests")
check(other.get_object(Bucket="pab", Key="p3")["Body"].read() == b"x", "but still the other key (grids3's one account)")

# x-amz-expected-bucket-owner, by canonical id or key id.
root_id = root.list_buckets()["Owner"]["ID"]
check(root.head_bucket(Bucket="pab", ExpectedBucketOwner=root_id)["ResponseMetadata"]["HTTPStatusCode"] == 200,
      "the expected owner by canonical id")
root.get_object(Bucket="pab", Key="p3", ExpectedBucketOwner=ak)
check(code(lambda: root.get_object(Bucket="pab", Key="p3", ExpectedBucketOwner=other_id)) == "AccessDenied",
      "another expected owner is AccessDenied")
check(code(lambda: root.copy_object(Bucket="pab", Key="c", CopySource={"Bucket": "pab", "Key": "p3"},
                                    ExpectedSourceBucketOwner=other_id)) == "AccessDenied",
      "x-amz-source-expected-bucket-owner too")

# Issue 28 item 5: principals and conditions as other S3 servers' users write them.
root.create_bucket(Bucket="conds")
other_id = other.list_buckets()["Owner"]["ID"]
conds = policy(
    # Ceph's form of a user of the one account: empty account, the canonical id.
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam:::user/{other_id}"}, "Action": "s3:PutObject",
     "Resource": "arn:aws:s3:::conds/*"},
    # The log delivery service: accepted, and it matches no key.
    {"Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"}, "Action": "s3:PutObject",
     "Resource": "arn:aws:s3:::conds/logs/*"},
    # Unencrypted uploads refused: a Null condition on the SSE-C algorithm header.
    {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::conds/secret/*",
     "Condition": {"Null": {"s3:x-amz-server-side-encryption-customer-algorithm": "true"}}},
    # ...IfExists: true when the key is absent (AWS's rule), so this Deny takes an upload
    # without a class too; one naming STANDARD passes.
    {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::conds/classed/*",
     "Condition": {"StringNotEqualsIfExists": {"s3:x-amz-storage-class": "STANDARD"}}},
    # A request tag condition.
    {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::conds/tagged/*",
     "Condition": {"StringNotEquals": {"s3:RequestObjectTag/team": "blue"}}},
    # A grant header condition.
    {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::conds/granted/*",
     "Condition": {"StringLike": {"s3:x-amz-grant-full-control": "*"}}},
)
root.put_bucket_policy(Bucket="conds", Policy=conds)
other.put_object(Bucket="conds", Key="by-arn", Body=b"x")
check(True, "arn:aws:iam:::user/<canonical id> allows that key")
check(code(lambda: root.put_object(Bucket="conds", Key="secret/plain", Body=b"x")) == "AccessDenied",
      "a Null condition on the SSE-C algorithm denies an unencrypted PUT, the root key's too")
check(code(lambda: root.put_object(Bucket="conds", Key="classed/ia", Body=b"x", StorageClass="STANDARD_IA")) == "AccessDenied",
      "StringNotEqualsIfExists denies a named class that differs")
check(code(lambda: root.put_object(Bucket="conds", Key="classed/none", Body=b"x")) == "AccessDenied",
      "and an upload without the key (IfExists is true then)")
root.put_object(Bucket="conds", Key="classed/std", Body=b"x", StorageClass="STANDARD")
check(True, "and lets STANDARD through")
check(code(lambda: root.put_object(Bucket="conds", Key="tagged/t", Body=b"x", Tagging="team=red")) == "AccessDenied",
      "s3:RequestObjectTag/<key> is evaluated")
root.put_object(Bucket="conds", Key="tagged/t", Body=b"x", Tagging="team=blue")
check(code(lambda: root.put_object(Bucket="conds", Key="granted/g", Body=b"x", GrantFullControl=f'id="{other_id}"')) == "AccessDenied",
      "s3:x-amz-grant-full-control is evaluated")
root.put_object(Bucket="conds", Key="granted/g", Body=b"x")
check(code(lambda: anon.put_object(Bucket="conds", Key="logs/x", Body=b"x")) == "AccessDenied",
      "a Service principal matches no unsigned request")

print("policy: all checks passed")
