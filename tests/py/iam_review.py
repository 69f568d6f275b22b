"""The hostile review of issue 60's identity, each finding as a check that failed before its
fix: account principals are exact, IAM's condition keys are set (so tag and policy guardrails
hold), an account key has no `${aws:username}` another account's user could share, renames
need the new name, boundaries are refused rather than ignored, account keys carry their
principal's keys, 2008 policies read variables as text, the simulator refuses what it cannot
simulate.

Usage: python iam_review.py ENDPOINT ROOT_KEY ROOT_SECRET B_KEY B_SECRET C_KEY C_SECRET
(B and C: keys the admin API made, the root credentials of two more accounts).
"""
import json
import sys

import boto3
from botocore.config import Config

from s3check import check, client as s3_client, code

endpoint, ak, sk, bk, bs, ck, cs = sys.argv[1:8]
NO_RETRY = Config(retries={"max_attempts": 1, "mode": "standard"})


def iam_client(a, s):
    return boto3.client("iam", endpoint_url=endpoint, aws_access_key_id=a, aws_secret_access_key=s,
                        region_name="us-east-1", config=NO_RETRY)


def doc(*statements, version="2012-10-17"):
    return json.dumps({"Version": version, "Statement": list(statements)})


iam, root = iam_client(ak, sk), s3_client(endpoint, ak, sk)
b_s3, c_s3 = s3_client(endpoint, bk, bs), s3_client(endpoint, ck, cs)
b_iam, c_iam = iam_client(bk, bs), iam_client(ck, cs)
root.create_bucket(Bucket="review")
root.put_object(Bucket="review", Key="f.txt", Body=b"f")
account_of = lambda c: c.get_user(UserName=c.create_user(UserName="probe")["User"]["UserName"])["User"]["Arn"].split(":")[4]
b_account, c_account = account_of(b_iam), account_of(c_iam)
check(b_account != c_account, "two accounts, two ids")

# H2: a bucket policy naming account B lets in B, not C.
root.put_bucket_policy(Bucket="review", Policy=doc(
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{b_account}:root"}, "Action": "s3:GetObject",
     "Resource": "arn:aws:s3:::review/*"}))
check(code(lambda: b_s3.get_object(Bucket="review", Key="f.txt")) == "OK", "the account named reads")
check(code(lambda: c_s3.get_object(Bucket="review", Key="f.txt")) == "AccessDenied",
      "another account does not (it did: every key matched any account principal)")
root.put_bucket_policy(Bucket="review", Policy=doc(
    {"Effect": "Allow", "Principal": {"AWS": b_account}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::review/*"}))
check(code(lambda: c_s3.get_object(Bucket="review", Key="f.txt")) == "AccessDenied", "nor by the bare id")
root.delete_bucket_policy(Bucket="review")

# M3: an account key carries aws:PrincipalAccount, so a Deny on it holds.
root.put_bucket_policy(Bucket="review", Policy=doc(
    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::review/*"},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::review/*",
     "Condition": {"StringEquals": {"aws:PrincipalAccount": c_account}}}))
check(code(lambda: b_s3.get_object(Bucket="review", Key="f.txt")) == "OK", "B reads a public object")
check(code(lambda: c_s3.get_object(Bucket="review", Key="f.txt")) == "AccessDenied",
      "a Deny on aws:PrincipalAccount stops C's own key")
root.delete_bucket_policy(Bucket="review")

# H4: an account key has no ${aws:username} (as AWS's root user has none), so a policy's
# `home/${aws:username}/` is an IAM user's home, never a key id's that any account could name
# a user after.
root.put_object(Bucket="review", Key=f"home/{bk}/private.txt", Body=b"secret")
root.put_bucket_policy(Bucket="review", Policy=doc(
    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::review/home/${aws:username}/*"}))
check(code(lambda: b_s3.get_object(Bucket="review", Key=f"home/{bk}/private.txt")) == "AccessDenied",
      "an account key's ${aws:username} is not its key id")
root.delete_bucket_policy(Bucket="review")

# H3: IAM's condition keys are set: a tag guardrail and a PolicyARN guardrail hold.
iam.create_user(UserName="mallory")
admin_all = iam.create_policy(PolicyName="AdminAll", PolicyDocument=doc(
    {"Effect": "Allow", "Action": "*", "Resource": "*"}))["Policy"]["Arn"]
iam.put_user_policy(UserName="mallory", PolicyName="self", PolicyDocument=doc(
    {"Effect": "Allow", "Action": "iam:TagUser", "Resource": "arn:aws:iam::*:user/${aws:username}",
     "Condition": {"ForAllValues:StringEquals": {"aws:TagKeys": ["nickname"]}}},
    {"Effect": "Allow", "Action": "iam:AttachUserPolicy", "Resource": "arn:aws:iam::*:user/${aws:username}"},
    {"Effect": "Deny", "Action": "iam:AttachUserPolicy", "Resource": "*",
     "Condition": {"ArnEquals": {"iam:PolicyARN": admin_all}}},
    {"Effect": "Allow", "Action": "iam:UpdateUser", "Resource": "arn:aws:iam::*:user/mallory"}))
mk = iam.create_access_key(UserName="mallory")["AccessKey"]
mallory = iam_client(mk["AccessKeyId"], mk["SecretAccessKey"])
check(code(lambda: mallory.tag_user(UserName="mallory", Tags=[{"Key": "nickname", "Value": "m"}])) == "OK",
      "the tag the guardrail allows")
check(code(lambda: mallory.tag_user(UserName="mallory", Tags=[{"Key": "role", "Value": "admin"}])) == "AccessDenied",
      "aws:TagKeys is set: another tag is refused")
check(code(lambda: mallory.attach_user_policy(UserName="mallory", PolicyArn=admin_all)) == "AccessDenied",
      "iam:PolicyARN is set: the denied policy is not attached")
check(iam.list_attached_user_policies(UserName="mallory")["AttachedPolicies"] == [], "and nothing was attached")

# M1: a rename needs the action on the new name too.
check(code(lambda: mallory.update_user(UserName="mallory", NewUserName="boss")) == "AccessDenied",
      "renaming itself into a name it has no right to is refused")
check(iam.get_user(UserName="mallory")["User"]["UserName"] == "mallory", "and the name stays")

# M2: a permissions boundary is refused, never ignored.
check(code(lambda: iam.create_user(UserName="bounded", PermissionsBoundary=admin_all)) == "NotImplemented",
      "CreateUser with PermissionsBoundary answers NotImplemented")
check(code(lambda: iam.get_user(UserName="bounded")) == "NoSuchEntity", "and makes no user")

# M4: in a 2008-10-17 policy a variable is text, as AWS reads it.
iam.create_user(UserName="old")
iam.put_user_policy(UserName="old", PolicyName="v2008", PolicyDocument=doc(
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::review/home/${aws:username}/*"},
    version="2008-10-17"))
root.put_object(Bucket="review", Key="home/old/x.txt", Body=b"x")
ok = iam.create_access_key(UserName="old")["AccessKey"]
old = s3_client(endpoint, ok["AccessKeyId"], ok["SecretAccessKey"])
check(code(lambda: old.get_object(Bucket="review", Key="home/old/x.txt")) == "AccessDenied",
      "a 2008 policy's ${aws:username} is not replaced")

# M5: what the simulator cannot simulate is refused.
arn = iam.get_user(UserName="old")["User"]["Arn"]
check(code(lambda: iam.simulate_principal_policy(
    PolicySourceArn=arn, ActionNames=["s3:GetObject"],
    ResourcePolicy=doc({"Effect": "Deny", "Principal": "*", "Action": "*", "Resource": "*"}))) == "NotImplemented",
      "SimulatePrincipalPolicy with a ResourcePolicy answers NotImplemented")

print("iam_review: all checks passed")
