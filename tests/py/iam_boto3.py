"""IAM users, groups and identity policies against a running grids3, through boto3's own `iam`
client and awscli's `aws iam` (AWS's IAM Query API on the S3 endpoint), and what those
policies then allow a user's S3 calls: AWS's documented evaluation, case by case.

Usage: python iam_boto3.py ENDPOINT ROOT_KEY ROOT_SECRET OTHER_ACCOUNT_KEY OTHER_SECRET
(the second pair: a key the admin API made, the root credentials of another account).
"""
import json
import os
import subprocess
import sys

import boto3
from botocore.config import Config

from s3check import check, client as s3_client, code

endpoint, ak, sk, ak2, sk2 = sys.argv[1:6]
NO_RETRY = Config(retries={"max_attempts": 1, "mode": "standard"})


def iam_client(a, s):
    return boto3.client("iam", endpoint_url=endpoint, aws_access_key_id=a, aws_secret_access_key=s,
                        region_name="us-east-1", config=NO_RETRY)


def doc(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


iam = iam_client(ak, sk)
root = s3_client(endpoint, ak, sk)
root.create_bucket(Bucket="team")
for k in ["home/alice/a.txt", "home/bob/b.txt", "shared/x.txt", "tagged/t.txt"]:
    root.put_object(Bucket="team", Key=k, Body=f"body of {k}".encode())

# Users, with AWS's shapes.
u = iam.create_user(UserName="alice", Tags=[{"Key": "team", "Value": "red"}])["User"]
account = u["Arn"].split(":")[4]
check(u["UserName"] == "alice" and u["UserId"].startswith("AIDA") and u["Path"] == "/", "CreateUser: name, AIDA id, path")
check(len(account) == 12 and account.isdigit() and u["Arn"] == f"arn:aws:iam::{account}:user/alice",
      "the ARN names a 12-digit account")
check(code(lambda: iam.create_user(UserName="ALICE")) == "EntityAlreadyExists", "names are unique without case")
check(code(lambda: iam.create_user(UserName="bad name")) == "ValidationError", "a name outside [\\w+=,.@-] is refused")
check(iam.get_user(UserName="alice")["User"]["Tags"] == [{"Key": "team", "Value": "red"}], "GetUser shows the tags")
check([x["UserName"] for x in iam.list_users()["Users"]] == ["alice"], "ListUsers")
iam.create_user(UserName="bob", Path="/staff/")
check([x["UserName"] for x in iam.list_users(PathPrefix="/staff/")["Users"]] == ["bob"], "ListUsers by path prefix")
check(code(lambda: iam.get_user(UserName="nobody")) == "NoSuchEntity", "NoSuchEntity for a missing user")

# A group with AWS's home-folder policy, as the IAM documentation writes it.
iam.create_group(GroupName="devs")
iam.add_user_to_group(GroupName="devs", UserName="alice")
check([x["UserName"] for x in iam.get_group(GroupName="devs")["Users"]] == ["alice"], "GetGroup lists the member")
check([g["GroupName"] for g in iam.list_groups_for_user(UserName="alice")["Groups"]] == ["devs"], "ListGroupsForUser")
home = doc(
    {"Sid": "ListHome", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::team",
     "Condition": {"StringLike": {"s3:prefix": ["home/${aws:username}/*", "home/${aws:username}/"]}}},
    {"Sid": "RWHome", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
     "Resource": "arn:aws:s3:::team/home/${aws:username}/*"},
)
pol = iam.create_policy(PolicyName="HomeFolder", PolicyDocument=home, Description="home folders")["Policy"]
check(pol["Arn"] == f"arn:aws:iam::{account}:policy/HomeFolder" and pol["DefaultVersionId"] == "v1", "CreatePolicy")
check(iam.get_policy_version(PolicyArn=pol["Arn"], VersionId="v1")["PolicyVersion"]["Document"] == json.loads(home),
      "GetPolicyVersion returns the document (URL-encoded on the wire, a dict in boto3)")
iam.attach_group_policy(GroupName="devs", PolicyArn=pol["Arn"])
check(iam.get_policy(PolicyArn=pol["Arn"])["Policy"]["AttachmentCount"] == 1, "AttachmentCount counts the group")
check([p["PolicyName"] for p in iam.list_attached_group_policies(GroupName="devs")["AttachedPolicies"]] == ["HomeFolder"],
      "ListAttachedGroupPolicies")
check(code(lambda: iam.create_policy(PolicyName="Bad", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "*"}]})))
      == "MalformedPolicyDocument", "an identity policy naming a principal is MalformedPolicyDocument")
check(code(lambda: iam.delete_policy(PolicyArn=pol["Arn"])) == "DeleteConflict", "an attached policy is not deleted")

key = iam.create_access_key(UserName="alice")["AccessKey"]
check(key["AccessKeyId"].startswith("AKIA") and len(key["SecretAccessKey"]) == 40 and key["Status"] == "Active",
      "CreateAccessKey: AKIA id, secret once")
check([k["AccessKeyId"] for k in iam.list_access_keys(UserName="alice")["AccessKeyMetadata"]] == [key["AccessKeyId"]],
      "ListAccessKeys")
alice = s3_client(endpoint, key["AccessKeyId"], key["SecretAccessKey"])

# The home folder, exactly.
check(code(lambda: alice.list_objects_v2(Bucket="team", Prefix="home/alice/")) == "OK", "alice lists her home")
check(code(lambda: alice.list_objects_v2(Bucket="team", Prefix="home/bob/")) == "AccessDenied", "but not bob's")
check(code(lambda: alice.list_objects_v2(Bucket="team")) == "AccessDenied", "nor the whole bucket")
check(alice.get_object(Bucket="team", Key="home/alice/a.txt")["Body"].read() == b"body of home/alice/a.txt",
      "alice reads her file")
check(code(lambda: alice.get_object(Bucket="team", Key="home/bob/b.txt")) == "AccessDenied", "not bob's")
check(code(lambda: alice.put_object(Bucket="team", Key="home/alice/new.txt", Body=b"n")) == "OK", "alice writes home")
check(code(lambda: alice.put_object(Bucket="team", Key="shared/y.txt", Body=b"n")) == "AccessDenied",
      "not outside her home")
check(code(lambda: alice.list_buckets()) == "AccessDenied", "no s3:ListAllMyBuckets, no ListBuckets")
check(code(lambda: alice.get_bucket_policy(Bucket="team")) == "AccessDenied", "nor the bucket's settings")
r = alice.delete_objects(Bucket="team", Delete={"Objects": [{"Key": "home/alice/new.txt"}, {"Key": "home/bob/b.txt"}]})
check([d["Key"] for d in r.get("Deleted", [])] == ["home/alice/new.txt"]
      and [e["Key"] for e in r.get("Errors", [])] == ["home/bob/b.txt"], "DeleteObjects is decided per key")

# The simulation agrees with what the requests got, naming the deciding statement.
sim = iam.simulate_principal_policy(
    PolicySourceArn=u["Arn"], ActionNames=["s3:GetObject", "s3:PutObject"],
    ResourceArns=["arn:aws:s3:::team/home/alice/a.txt", "arn:aws:s3:::team/home/bob/b.txt"])["EvaluationResults"]
decided = {(r["EvalActionName"], r["EvalResourceName"].split("/")[-2]): r["EvalDecision"] for r in sim}
check(decided == {("s3:GetObject", "alice"): "allowed", ("s3:PutObject", "alice"): "allowed",
                  ("s3:GetObject", "bob"): "implicitDeny", ("s3:PutObject", "bob"): "implicitDeny"},
      f"SimulatePrincipalPolicy: {decided}")
check(any("HomeFolder" in m["SourcePolicyId"] and "RWHome" in m["SourcePolicyId"]
          for r in sim for m in r["MatchedStatements"]), "it names the policy and statement that allowed")
details = iam.get_account_authorization_details()
users = {x["UserName"]: x for x in details["UserDetailList"]}
check(users["alice"]["GroupList"] == ["devs"], "GetAccountAuthorizationDetails: alice in devs")
check([g["AttachedManagedPolicies"][0]["PolicyName"] for g in details["GroupDetailList"]] == ["HomeFolder"],
      "the group's attached policy")
check([p["PolicyVersionList"][0]["Document"] for p in details["Policies"]] == [json.loads(home)],
      "the policy's document, decoded by boto3")

# An inline user policy allows; a Deny in the group's inline policy beats it.
iam.put_user_policy(UserName="alice", PolicyName="ReadShared", PolicyDocument=doc(
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::team/shared/*"}))
check(code(lambda: alice.get_object(Bucket="team", Key="shared/x.txt")) == "OK", "a user inline Allow suffices")
check(iam.list_user_policies(UserName="alice")["PolicyNames"] == ["ReadShared"], "ListUserPolicies")
iam.put_group_policy(GroupName="devs", PolicyName="NoShared", PolicyDocument=doc(
    {"Effect": "Deny", "Action": "s3:*", "Resource": "arn:aws:s3:::team/shared/*"}))
check(code(lambda: alice.get_object(Bucket="team", Key="shared/x.txt")) == "AccessDenied",
      "a Deny in a group's policy beats the user's Allow")
iam.delete_group_policy(GroupName="devs", PolicyName="NoShared")
check(code(lambda: alice.get_object(Bucket="team", Key="shared/x.txt")) == "OK", "gone with the Deny")

# NotAction / NotResource, and conditions on tags.
iam.put_user_policy(UserName="alice", PolicyName="Tagged", PolicyDocument=doc(
    {"Effect": "Allow", "Action": "s3:GetObject", "NotResource": "arn:aws:s3:::team/home/*",
     "Condition": {"StringEquals": {"aws:PrincipalTag/team": "red"}}},
    {"Effect": "Deny", "NotAction": ["s3:GetObject", "s3:ListBucket", "s3:PutObject", "s3:DeleteObject"],
     "Resource": "*"}))
check(code(lambda: alice.get_object(Bucket="team", Key="tagged/t.txt")) == "OK",
      "NotResource with a principal-tag condition allows what it does not exclude")
check(code(lambda: alice.put_object_tagging(Bucket="team", Key="home/alice/a.txt",
                                            Tagging={"TagSet": [{"Key": "a", "Value": "b"}]})) == "AccessDenied",
      "a NotAction Deny refuses every other action")
iam.tag_user(UserName="alice", Tags=[{"Key": "team", "Value": "blue"}])
check(code(lambda: alice.get_object(Bucket="team", Key="tagged/t.txt")) == "AccessDenied",
      "retagged, the condition no longer holds")
check(iam.list_user_tags(UserName="alice")["Tags"] == [{"Key": "team", "Value": "blue"}], "TagUser replaces a value")
iam.delete_user_policy(UserName="alice", PolicyName="Tagged")

# A bucket-policy Allow naming the user alone suffices within the account.
bob_key = iam.create_access_key(UserName="bob")["AccessKey"]
bob = s3_client(endpoint, bob_key["AccessKeyId"], bob_key["SecretAccessKey"])
check(code(lambda: bob.get_object(Bucket="team", Key="shared/x.txt")) == "AccessDenied", "bob has no policy")
root.put_bucket_policy(Bucket="team", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:user/staff/bob"},
     "Action": "s3:GetObject", "Resource": "arn:aws:s3:::team/shared/*"}]}))
check(code(lambda: bob.get_object(Bucket="team", Key="shared/x.txt")) == "OK",
      "a bucket policy naming the user allows it without an identity policy")
root.put_bucket_policy(Bucket="team", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
     "Action": "s3:GetObject", "Resource": "arn:aws:s3:::team/shared/*"}]}))
check(code(lambda: bob.get_object(Bucket="team", Key="shared/x.txt")) == "AccessDenied",
      "one naming only the account delegates to identity policies, and bob has none")
root.delete_bucket_policy(Bucket="team")

# Identity is authorized by the same engine: a user without iam:* actions touches nothing.
alice_iam = iam_client(key["AccessKeyId"], key["SecretAccessKey"])
check(code(lambda: alice_iam.put_user_policy(UserName="alice", PolicyName="All", PolicyDocument=doc(
    {"Effect": "Allow", "Action": "*", "Resource": "*"}))) == "AccessDenied", "alice cannot grant herself more")
check(code(lambda: alice_iam.create_access_key(UserName="bob")) == "AccessDenied", "nor make keys for bob")
check(code(lambda: alice_iam.attach_user_policy(UserName="alice", PolicyArn=pol["Arn"])) == "AccessDenied",
      "nor attach policies")
iam.put_user_policy(UserName="alice", PolicyName="OwnKeys", PolicyDocument=doc(
    {"Effect": "Allow", "Action": ["iam:ListAccessKeys", "iam:GetUser"],
     "Resource": "arn:aws:iam::*:user/${aws:username}"}))
check(alice_iam.get_user()["User"]["UserName"] == "alice", "GetUser without a name is the caller")
check(code(lambda: alice_iam.list_access_keys(UserName="alice")) == "OK", "an iam: Allow on her own ARN lets her")
check(code(lambda: alice_iam.list_access_keys(UserName="bob")) == "AccessDenied", "but not on bob's")

# Another account: its root key sees none of this account's identity, and its buckets are its own.
other_iam = iam_client(ak2, sk2)
check(other_iam.list_users()["Users"] == [], "another account lists no users of this one")
check(code(lambda: other_iam.get_user(UserName="alice")) == "NoSuchEntity", "nor finds alice")
check(code(lambda: other_iam.delete_user(UserName="alice")) == "NoSuchEntity", "nor deletes her")
other = s3_client(endpoint, ak2, sk2)
other.create_bucket(Bucket="theirs")
check(code(lambda: alice.list_objects_v2(Bucket="theirs", Prefix="home/alice/")) == "AccessDenied",
      "across accounts, the identity policy alone does not reach another account's bucket")

# Keys: inactive keys and deleted users sign nothing; deletes need the references gone first.
iam.update_access_key(UserName="alice", AccessKeyId=key["AccessKeyId"], Status="Inactive")
check(code(lambda: alice.get_object(Bucket="team", Key="home/alice/a.txt")) == "InvalidAccessKeyId",
      "an Inactive key signs nothing")
iam.update_access_key(UserName="alice", AccessKeyId=key["AccessKeyId"], Status="Active")
check(code(lambda: alice.get_object(Bucket="team", Key="home/alice/a.txt")) == "OK", "Active again")
iam.create_access_key(UserName="alice")
check(code(lambda: iam.create_access_key(UserName="alice")) == "LimitExceeded", "two keys at most")
check(code(lambda: iam.delete_user(UserName="alice")) == "DeleteConflict", "a user with keys is not deleted")
iam.detach_group_policy(GroupName="devs", PolicyArn=pol["Arn"])
check(code(lambda: alice.get_object(Bucket="team", Key="home/alice/a.txt")) == "AccessDenied",
      "detached, the home policy no longer applies")
for k in iam.list_access_keys(UserName="alice")["AccessKeyMetadata"]:
    iam.delete_access_key(UserName="alice", AccessKeyId=k["AccessKeyId"])
for name in iam.list_user_policies(UserName="alice")["PolicyNames"]:
    iam.delete_user_policy(UserName="alice", PolicyName=name)
check(code(lambda: iam.delete_group(GroupName="devs")) == "DeleteConflict", "a group with members is not deleted")
iam.remove_user_from_group(GroupName="devs", UserName="alice")
iam.delete_user(UserName="alice")
iam.delete_group(GroupName="devs")
check(code(lambda: alice.get_object(Bucket="team", Key="home/alice/a.txt")) == "InvalidAccessKeyId",
      "a deleted user's key signs nothing")

# Versions of a managed policy.
v2 = iam.create_policy_version(PolicyArn=pol["Arn"], PolicyDocument=doc(
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}), SetAsDefault=True)["PolicyVersion"]
check(v2["VersionId"] == "v2" and v2["IsDefaultVersion"], "CreatePolicyVersion v2, default")
check([v["VersionId"] for v in iam.list_policy_versions(PolicyArn=pol["Arn"])["Versions"]] == ["v2", "v1"],
      "ListPolicyVersions, newest first")
check(code(lambda: iam.delete_policy_version(PolicyArn=pol["Arn"], VersionId="v2")) == "DeleteConflict",
      "the default version is not deleted")
iam.set_default_policy_version(PolicyArn=pol["Arn"], VersionId="v1")
iam.delete_policy_version(PolicyArn=pol["Arn"], VersionId="v2")
iam.delete_policy(PolicyArn=pol["Arn"])
check(code(lambda: iam.get_policy(PolicyArn=pol["Arn"])) == "NoSuchEntity", "DeletePolicy")

# What grids3 does not do is refused, never answered as done.
check(code(lambda: iam.create_login_profile(UserName="bob", Password="Secret-123")) == "NotImplemented",
      "an IAM action grids3 does not implement answers NotImplemented")

# awscli's `aws iam`, unmodified.
env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk, AWS_DEFAULT_REGION="us-east-1")
aws = os.path.join(os.path.dirname(sys.executable), "aws")


def cli(*args):
    out = subprocess.run([aws, "iam", *args, "--endpoint-url", endpoint, "--output", "json"],
                         capture_output=True, text=True, env=env)
    return out.returncode, out.stdout, out.stderr


rc, out, err = cli("create-user", "--user-name", "carol")
check(rc == 0 and json.loads(out)["User"]["UserName"] == "carol", f"aws iam create-user ({err.strip()})")
rc, out, err = cli("create-group", "--group-name", "ops")
check(rc == 0, f"aws iam create-group ({err.strip()})")
rc, out, err = cli("add-user-to-group", "--group-name", "ops", "--user-name", "carol")
check(rc == 0, f"aws iam add-user-to-group ({err.strip()})")
rc, out, err = cli("put-group-policy", "--group-name", "ops", "--policy-name", "ReadTeam", "--policy-document",
                   doc({"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"],
                        "Resource": ["arn:aws:s3:::team", "arn:aws:s3:::team/*"]}))
check(rc == 0, f"aws iam put-group-policy ({err.strip()})")
rc, out, err = cli("create-access-key", "--user-name", "carol")
check(rc == 0, f"aws iam create-access-key ({err.strip()})")
ck = json.loads(out)["AccessKey"]
carol = s3_client(endpoint, ck["AccessKeyId"], ck["SecretAccessKey"])
check([o["Key"] for o in carol.list_objects_v2(Bucket="team")["Contents"]][:1] == ["home/alice/a.txt"],
      "carol (made by awscli) lists the bucket as her group's policy says")
check(code(lambda: carol.put_object(Bucket="team", Key="x", Body=b"x")) == "AccessDenied", "and writes nothing")
rc, out, err = cli("get-user", "--user-name", "nobody")
check(rc != 0 and "NoSuchEntity" in err, "aws iam reports NoSuchEntity")

print("iam_boto3: all checks passed")
