"""Roles and STS against a running grids3 (issue 61), through boto3's own `iam` and `sts`
clients, botocore's assume-role credential provider, awscli's `aws sts`, and minio-py's
AssumeRoleProvider: roles and their trust policies, AssumeRole, GetSessionToken,
GetCallerIdentity, temporary credentials in headers and presigned URLs, session policies that
only cut, revocation by `aws:TokenIssueTime`, a deleted role's sessions, and AWS's errors.

Usage: python sts_boto3.py ENDPOINT ROOT_KEY ROOT_SECRET OTHER_ACCOUNT_KEY OTHER_SECRET
"""
import datetime
import json
import os
import subprocess
import sys
import time

import boto3
import botocore
from botocore.config import Config

from s3check import check, client as s3_client, code, curl

endpoint, ak, sk, ak2, sk2 = sys.argv[1:6]
# Without botocore's own checks of parameters: the server's answers to bad ones are tested.
NO_RETRY = Config(retries={"max_attempts": 1, "mode": "standard"}, parameter_validation=False)


def svc(name, a, s, token=None):
    return boto3.client(name, endpoint_url=endpoint, aws_access_key_id=a, aws_secret_access_key=s,
                        aws_session_token=token, region_name="us-east-1", config=NO_RETRY)


def s3_of(creds):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=creds["AccessKeyId"],
                        aws_secret_access_key=creds["SecretAccessKey"], aws_session_token=creds["SessionToken"],
                        region_name="us-east-1", config=Config(s3={"addressing_style": "path"},
                                                               retries={"max_attempts": 1}))


def doc(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


iam = svc("iam", ak, sk)
sts = svc("sts", ak, sk)
root = s3_client(endpoint, ak, sk)
root.create_bucket(Bucket="builds")
root.create_bucket(Bucket="secrets")
root.put_object(Bucket="builds", Key="a.txt", Body=b"artifact")
root.put_object(Bucket="secrets", Key="s.txt", Body=b"secret")

me = sts.get_caller_identity()
account = me["Account"]
check(len(account) == 12 and me["Arn"] == f"arn:aws:iam::{account}:root" and me["UserId"] == account,
      "GetCallerIdentity of the account's root credentials")

# A user who may assume the role through the account's delegation.
iam.create_user(UserName="dev")
dev_key = iam.create_access_key(UserName="dev")["AccessKey"]
dev_sts = svc("sts", dev_key["AccessKeyId"], dev_key["SecretAccessKey"])
check(dev_sts.get_caller_identity()["Arn"] == f"arn:aws:iam::{account}:user/dev", "GetCallerIdentity of a user")

trust_account = doc({"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"}, "Action": "sts:AssumeRole"})
role = iam.create_role(RoleName="ci", AssumeRolePolicyDocument=trust_account, MaxSessionDuration=7200,
                       Description="builds")["Role"]
role_arn = f"arn:aws:iam::{account}:role/ci"
check(role["Arn"] == role_arn and role["RoleId"].startswith("AROA") and role["MaxSessionDuration"] == 7200,
      "CreateRole: ARN, AROA id, MaxSessionDuration")
check(iam.get_role(RoleName="ci")["Role"]["AssumeRolePolicyDocument"] == json.loads(trust_account),
      "GetRole returns the trust policy (URL-encoded on the wire, a dict in boto3)")
check([r["RoleName"] for r in iam.list_roles()["Roles"]] == ["ci"], "ListRoles")
check(code(lambda: iam.create_role(RoleName="CI", AssumeRolePolicyDocument=trust_account)) == "EntityAlreadyExists",
      "role names are unique without case")
check(code(lambda: iam.create_role(RoleName="bad", AssumeRolePolicyDocument=doc(
    {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole", "Resource": "*"})))
      == "MalformedPolicyDocument", "a trust policy naming a Resource is MalformedPolicyDocument")
check(code(lambda: iam.create_role(RoleName="bad", AssumeRolePolicyDocument=trust_account, MaxSessionDuration=60))
      == "ValidationError", "MaxSessionDuration under an hour is refused")
iam.put_role_policy(RoleName="ci", PolicyName="builds", PolicyDocument=doc(
    {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:ListBucket"],
     "Resource": ["arn:aws:s3:::builds", "arn:aws:s3:::builds/*"]}))
check(iam.list_role_policies(RoleName="ci")["PolicyNames"] == ["builds"], "PutRolePolicy / ListRolePolicies")

# The account's root credentials assume it (the trust names the account).
r = sts.assume_role(RoleArn=role_arn, RoleSessionName="job-1")
c = r["Credentials"]
check(c["AccessKeyId"].startswith("ASIA") and len(c["SecretAccessKey"]) == 40 and c["SessionToken"],
      "AssumeRole: ASIA key, secret, token")
check(r["AssumedRoleUser"]["Arn"] == f"arn:aws:sts::{account}:assumed-role/ci/job-1"
      and r["AssumedRoleUser"]["AssumedRoleId"] == role["RoleId"] + ":job-1", "AssumedRoleUser")
left = (c["Expiration"] - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
check(3500 < left <= 3601, f"the default session lasts an hour ({left:.0f} s)")
job = s3_of(c)
check(job.get_object(Bucket="builds", Key="a.txt")["Body"].read() == b"artifact", "the session reads what the role allows")
job.put_object(Bucket="builds", Key="out.txt", Body=b"built")
check(code(lambda: job.get_object(Bucket="secrets", Key="s.txt")) == "AccessDenied", "and nothing else")
check(code(lambda: job.list_buckets()) == "AccessDenied", "ListBuckets needs s3:ListAllMyBuckets")
who = svc("sts", c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"]).get_caller_identity()
check(who["Arn"] == f"arn:aws:sts::{account}:assumed-role/ci/job-1" and who["UserId"] == role["RoleId"] + ":job-1",
      "GetCallerIdentity of a role's session")

# The token is checked, never ignored.
bad = dict(c, SessionToken=c["SessionToken"][:-4] + "AAAA")
check(code(lambda: s3_of(bad).get_object(Bucket="builds", Key="a.txt")) == "InvalidToken", "a wrong token: InvalidToken")
no_token = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=c["AccessKeyId"],
                        aws_secret_access_key=c["SecretAccessKey"], region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
check(code(lambda: no_token.get_object(Bucket="builds", Key="a.txt")) == "InvalidAccessKeyId",
      "temporary credentials without their token sign nothing")
with_token = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                          aws_session_token=c["SessionToken"], region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
check(code(lambda: with_token.get_object(Bucket="builds", Key="a.txt")) == "InvalidToken",
      "a long-term key with a session token: InvalidToken")
# An unsigned token header: the signature does not cover it.
status, body = curl("-s", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{c['AccessKeyId']}:{c['SecretAccessKey']}",
                    f"{endpoint}/builds/a.txt")
check(status in (400, 403) and b"artifact" not in body, f"curl without the token is refused ({status})")

# A presigned URL carries the token, signed: SigV4's X-Amz-Security-Token, and SigV2's
# x-amz-security-token (botocore's default for presigned S3 URLs in us-east-1).
v4 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=c["AccessKeyId"],
                  aws_secret_access_key=c["SecretAccessKey"], aws_session_token=c["SessionToken"],
                  region_name="us-east-1", config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
for sig, signer in [("SigV4", v4), ("SigV2", job)]:
    url = signer.generate_presigned_url("get_object", Params={"Bucket": "builds", "Key": "a.txt"}, ExpiresIn=300)
    name = "X-Amz-Security-Token=" if sig == "SigV4" else "x-amz-security-token="
    check(name in url, f"the {sig} presigned URL carries the token")
    status, body = curl(url)
    check(status == 200 and body == b"artifact", f"a {sig} presigned URL of a session works in curl")
    status, body = curl(url.replace(name, name + "x"))
    check(status in (400, 403) and b"artifact" not in body, f"a {sig} presigned URL with its token changed is refused")

# The user: the trust names the account, so dev's identity policy must allow sts:AssumeRole.
check(code(lambda: dev_sts.assume_role(RoleArn=role_arn, RoleSessionName="dev")) == "AccessDenied",
      "a user without an identity Allow cannot assume an account-trusted role")
iam.put_user_policy(UserName="dev", PolicyName="assume", PolicyDocument=doc(
    {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": role_arn}))
d = dev_sts.assume_role(RoleArn=role_arn, RoleSessionName="dev-1", DurationSeconds=7200)["Credentials"]
check(s3_of(d).get_object(Bucket="builds", Key="a.txt")["Body"].read() == b"artifact",
      "with it, the user's session has the role's rights")
check(code(lambda: dev_sts.assume_role(RoleArn=role_arn, RoleSessionName="dev", DurationSeconds=7201)) == "ValidationError",
      "DurationSeconds beyond the role's maximum: ValidationError")
check(code(lambda: dev_sts.assume_role(RoleArn=role_arn, RoleSessionName="dev", DurationSeconds=899)) == "ValidationError",
      "DurationSeconds under 900: ValidationError")
check(code(lambda: dev_sts.assume_role(RoleArn=role_arn, RoleSessionName="a b")) == "ValidationError",
      "a RoleSessionName outside AWS's pattern: ValidationError")
got = code(lambda: dev_sts.assume_role(RoleArn=f"arn:aws:iam::{account}:role/nope", RoleSessionName="xx"))
check(got == "AccessDenied", f"a role that does not exist: AccessDenied, as AWS answers ({got})")

# Session policies only cut.
cut = sts.assume_role(RoleArn=role_arn, RoleSessionName="cut", Policy=doc(
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::builds/*"},
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::secrets/*"}))
check(0 < cut["PackedPolicySize"] <= 100, "PackedPolicySize is a percentage")
cs = s3_of(cut["Credentials"])
check(cs.get_object(Bucket="builds", Key="a.txt")["Body"].read() == b"artifact", "the session policy keeps what both allow")
check(code(lambda: cs.put_object(Bucket="builds", Key="x", Body=b"x")) == "AccessDenied",
      "and cuts what the session policy leaves out")
check(code(lambda: cs.get_object(Bucket="secrets", Key="s.txt")) == "AccessDenied",
      "a session policy never adds what the role lacks")
check(code(lambda: sts.assume_role(RoleArn=role_arn, RoleSessionName="xx", Policy="{not json")) == "MalformedPolicyDocument",
      "a session policy that does not parse: MalformedPolicyDocument")
big = doc(*[{"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::builds/{i:04d}/*"} for i in range(60)])
check(code(lambda: sts.assume_role(RoleArn=role_arn, RoleSessionName="xx", Policy=big)) == "PackedPolicyTooLarge",
      "a session policy over the limit: PackedPolicyTooLarge")
check(code(lambda: sts.assume_role(RoleArn=role_arn, RoleSessionName="xx", Tags=[{"Key": "a", "Value": "b"}]))
      == "NotImplemented", "session tags are refused, never ignored")
# A session cannot shed its session policy by assuming its own role (the trust names the
# account, not the role).
cut_sts = svc("sts", cut["Credentials"]["AccessKeyId"], cut["Credentials"]["SecretAccessKey"],
              cut["Credentials"]["SessionToken"])
check(code(lambda: cut_sts.assume_role(RoleArn=role_arn, RoleSessionName="again")) == "AccessDenied",
      "a role's session cannot re-assume its role through an account-wide trust")

# A bucket policy may name the role, or the session.
root.put_bucket_policy(Bucket="secrets", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:sts::{account}:assumed-role/ci/job-1"},
     "Action": "s3:GetObject", "Resource": "arn:aws:s3:::secrets/*"}]}))
check(job.get_object(Bucket="secrets", Key="s.txt")["Body"].read() == b"secret",
      "a bucket policy naming the session's ARN reaches it")
check(code(lambda: s3_of(d).get_object(Bucket="secrets", Key="s.txt")) == "AccessDenied", "and not another session")
root.put_bucket_policy(Bucket="secrets", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": role_arn}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::secrets/*"}]}))
check(s3_of(d).get_object(Bucket="secrets", Key="s.txt")["Body"].read() == b"secret",
      "a bucket policy naming the role reaches every session of it")
root.delete_bucket_policy(Bucket="secrets")

# Another account: the trust must name it and its own identity must allow (root: implicitly).
other_sts = svc("sts", ak2, sk2)
other_account = other_sts.get_caller_identity()["Account"]
check(other_account != account, "the other key is another account")
check(code(lambda: other_sts.assume_role(RoleArn=role_arn, RoleSessionName="xx")) == "AccessDenied",
      "another account cannot assume a role whose trust does not name it")
iam.update_assume_role_policy(RoleName="ci", PolicyDocument=doc(
    {"Effect": "Allow", "Principal": {"AWS": [f"arn:aws:iam::{account}:root", f"arn:aws:iam::{other_account}:root"]},
     "Action": "sts:AssumeRole", "Condition": {"StringEquals": {"sts:ExternalId": "xyz"}}}))
check(code(lambda: other_sts.assume_role(RoleArn=role_arn, RoleSessionName="xx")) == "AccessDenied",
      "the trust's sts:ExternalId condition holds")
x = other_sts.assume_role(RoleArn=role_arn, RoleSessionName="partner", ExternalId="xyz")["Credentials"]
check(s3_of(x).get_object(Bucket="builds", Key="a.txt")["Body"].read() == b"artifact",
      "with the external id, the other account's session has the role's rights")
iam.update_assume_role_policy(RoleName="ci", PolicyDocument=trust_account)

# GetSessionToken: the caller's own rights, for a while.
t = dev_sts.get_session_token(DurationSeconds=900)["Credentials"]
check(t["AccessKeyId"].startswith("ASIA"), "GetSessionToken")
ts = svc("sts", t["AccessKeyId"], t["SecretAccessKey"], t["SessionToken"])
check(ts.get_caller_identity()["Arn"] == f"arn:aws:iam::{account}:user/dev", "a session token acts as its user")
check(code(lambda: ts.get_session_token()) == "AccessDenied", "temporary credentials make no session token")
check(code(lambda: s3_of(t).get_object(Bucket="builds", Key="a.txt")) == "AccessDenied",
      "a user's session token has the user's rights (none on S3 here)")
check(code(lambda: sts.get_session_token(DurationSeconds=7200)) == "ValidationError",
      "root credentials' session tokens last at most an hour")

# Revoking a role's sessions, AWS's way: a Deny on aws:TokenIssueTime older than now.
now = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)
iam.put_role_policy(RoleName="ci", PolicyName="AWSRevokeOlderSessions", PolicyDocument=doc(
    {"Effect": "Deny", "Action": "*", "Resource": "*",
     "Condition": {"DateLessThan": {"aws:TokenIssueTime": now.strftime("%Y-%m-%dT%H:%M:%SZ")}}}))
check(code(lambda: job.get_object(Bucket="builds", Key="a.txt")) == "AccessDenied",
      "sessions issued before the revocation are denied")
time.sleep(3)
fresh = s3_of(sts.assume_role(RoleArn=role_arn, RoleSessionName="after")["Credentials"])
check(fresh.get_object(Bucket="builds", Key="a.txt")["Body"].read() == b"artifact", "a session issued after it works")
iam.delete_role_policy(RoleName="ci", PolicyName="AWSRevokeOlderSessions")

# awscli's `aws sts assume-role`, unmodified.
env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk, AWS_DEFAULT_REGION="us-east-1")
aws = os.path.join(os.path.dirname(sys.executable), "aws")
out = subprocess.run([aws, "sts", "assume-role", "--role-arn", role_arn, "--role-session-name", "cli",
                      "--endpoint-url", endpoint, "--output", "json"], capture_output=True, text=True, env=env)
check(out.returncode == 0, f"aws sts assume-role ({out.stderr.strip()})")
cli_creds = json.loads(out.stdout)["Credentials"]
check(s3_of(cli_creds).get_object(Bucket="builds", Key="a.txt")["Body"].read() == b"artifact",
      "awscli's credentials read the bucket")

# botocore's own assume-role provider (a profile with role_arn and source_profile).
cfg = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "sts_profile.cfg")
cfg = os.path.abspath(cfg)
with open(cfg, "w") as f:
    f.write(f"[profile base]\naws_access_key_id = {ak}\naws_secret_access_key = {sk}\nregion = us-east-1\n"
            f"endpoint_url = {endpoint}\n"
            f"[profile ci]\nrole_arn = {role_arn}\nsource_profile = base\nrole_session_name = provider\n"
            f"region = us-east-1\nendpoint_url = {endpoint}\n")
os.environ["AWS_CONFIG_FILE"] = cfg
sess = boto3.Session(profile_name="ci")
prov = sess.client("s3", config=Config(s3={"addressing_style": "path"}))
check(prov.get_object(Bucket="builds", Key="a.txt")["Body"].read() == b"artifact",
      "boto3's assume-role credential provider gets and uses a session")
os.environ.pop("AWS_CONFIG_FILE")

# minio-py's AssumeRoleProvider.
from minio import Minio
from minio.credentials import AssumeRoleProvider
host = endpoint.split("://", 1)[1]
mp = AssumeRoleProvider(sts_endpoint=endpoint, access_key=ak, secret_key=sk, role_arn=role_arn,
                        role_session_name="minio", region="us-east-1")
mc = Minio(host, credentials=mp, secure=False, region="us-east-1")
check(mc.get_object("builds", "a.txt").read() == b"artifact", "minio-py's AssumeRoleProvider")

# Deleting the role ends its sessions.
iam.delete_role_policy(RoleName="ci", PolicyName="builds")
check(code(lambda: iam.delete_role(RoleName="nope")) == "NoSuchEntity", "DeleteRole of a missing role")
iam.delete_role(RoleName="ci")
check(code(lambda: fresh.get_object(Bucket="builds", Key="a.txt")) == "InvalidAccessKeyId",
      "a deleted role's sessions sign nothing")
check(code(lambda: sts.assume_role(RoleArn=role_arn, RoleSessionName="xx")) == "AccessDenied",
      "and it is assumed no more")

print("sts_boto3: all checks passed")
