"""MinIO's admin API (/minio/admin/v3/) against a running grids3, through minio-py's own
MinioAdmin (sealed payloads, empty-region signatures), and what its users, groups, canned
policies and service accounts then allow S3 calls (boto3), case by case.

Usage: python minio_admin.py ENDPOINT ROOT_KEY ROOT_SECRET OTHER_ACCOUNT_KEY OTHER_SECRET
(the second pair: a key the admin API made, the root credentials of another account).
"""
import json
import os
import sys

import hashlib
from urllib.parse import urlsplit

import boto3
import urllib3
from botocore.config import Config
from botocore.exceptions import ClientError
from minio import MinioAdmin
from minio import time as mtime
from minio.credentials import Credentials, StaticProvider
from minio.crypto import decrypt, encrypt
from minio.minioadmin import _COMMAND
from minio.signer import sign_v4_s3
from minio.error import MinioAdminException

failed = []


def check(cond, what):
    """s3check's check; with GRIDS3_CHECK_ALL set, a failure is reported and the checks go on
    (to see every check a change to the server breaks at once)."""
    if cond:
        print(f"ok: {what}")
    elif os.environ.get("GRIDS3_CHECK_ALL"):
        failed.append(what)
        print(f"FAILED (going on): {what}", file=sys.stderr)
    else:
        sys.exit(f"FAILED: {what}")


endpoint, ak, sk, ak2, sk2 = sys.argv[1:6]
host = endpoint.split("://", 1)[1]


def admin(a, s):
    return MinioAdmin(endpoint=host, credentials=StaticProvider(a, s), secure=False)


def s3(a, s):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=a, aws_secret_access_key=s,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def s3_code(fn):
    try:
        fn()
    except ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


def adm_err(fn):
    """(status, MinIO code) of an admin call; (200, "OK") when it succeeds."""
    try:
        fn()
    except MinioAdminException as e:
        try:
            c = json.loads(e._body)["Code"]
        except (ValueError, KeyError):
            c = e._body
        return (int(e._code), c)
    return (200, "OK")


def doc(*statements):
    return {"Version": "2012-10-17", "Statement": list(statements)}


def get(c, b, k):
    return lambda: c.get_object(Bucket=b, Key=k)["Body"].read()


def put(c, b, k):
    return lambda: c.put_object(Bucket=b, Key=k, Body=b"x")


def listing(c, b):
    return lambda: c.list_objects_v2(Bucket=b)


def raw(method, path, region, body=b"", payload=None):
    """A request signed by minio-py's own signer with `region`; `payload` is the
    x-amz-content-sha256 to claim (the body's hash by default). Its status and MinIO code."""
    url = urlsplit(endpoint + path)
    date = mtime.utcnow()
    sha = payload or hashlib.sha256(body).hexdigest()
    headers = {"Host": url.netloc, "x-amz-date": mtime.to_amz_date(date), "x-amz-content-sha256": sha}
    headers = sign_v4_s3(method=method, url=url, region=region, headers=headers,
                         credentials=Credentials(ak, sk), content_sha256=sha, date=date)
    r = urllib3.request(method, endpoint + path, headers=headers, body=body or None, retries=False)
    text = r.data.decode(errors="replace")
    try:
        v = json.loads(text)
    except ValueError:
        return r.status, text
    return r.status, v.get("Code") if isinstance(v, dict) else v


def add_sa_for(adm, secret, body):
    """add-service-account with madmin's `targetUser`, which minio-py 7.2.20 does not send:
    the same sealed request, built with minio-py's own encryption."""
    r = adm._url_open(method="PUT", command=_COMMAND.SERVICE_ACCOUNT_ADD,
                      body=encrypt(json.dumps(body).encode(), secret), preload_content=False)
    return json.loads(decrypt(r, secret))


root = admin(ak, sk)
root_s3 = s3(ak, sk)
for b in ["pub", "priv"]:
    root_s3.create_bucket(Bucket=b)
    root_s3.put_object(Bucket=b, Key="x", Body=b"body of x")

# Unknown admin commands are refused, never answered as done.
check(adm_err(lambda: root.info()) == (501, "NotImplemented"), "server info: 501 NotImplemented, never a silent success")
check(adm_err(lambda: admin(ak, "wrong-secret").user_list())[1] == "SignatureDoesNotMatch",
      "a wrong secret: SignatureDoesNotMatch (checked before any decryption)")

check(adm_err(lambda: admin(ak, "wrong-secret").user_add("zed", "zed-secret-1"))[1] == "SignatureDoesNotMatch",
      "a sealed body signed with a wrong secret: SignatureDoesNotMatch")
# Any region on the admin paths, as MinIO accepts (minio-py signs with ""); not on S3's.
check(raw("GET", "/minio/admin/v3/groups", "")[0] == 200, "the admin API takes an empty region")
check(raw("GET", "/minio/admin/v3/groups", "eu-west-9")[0] == 200, "and any other")
check(raw("GET", "/", "")[0] == 400, "an S3 request signed with an empty region is still refused")
check(raw("GET", "/minio/admin/v3/groups", "", payload="UNSIGNED-PAYLOAD")[0] == 403,
      "an unsigned payload is refused on the admin API")
check(raw("PUT", "/minio/admin/v3/add-user?accessKey=zed", "", body=b"x" * 300000) == (400, "XMinioAdminConfigTooLarge"),
      "a body over 256 KiB is refused before anything else")

# Canned policies.
readpub = doc({"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::pub/*"]},
              {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": ["arn:aws:s3:::pub"]})
root.policy_add("readpub", policy=readpub)
check(json.loads(root.policy_info("readpub")) == readpub, "info-canned-policy returns the document")
check(raw("GET", "/minio/admin/v3/info-canned-policy?name=readpub&v=2", "")[0] == 200,
      "info-canned-policy v=2 (mc's PolicyInfo shape)")
check(raw("GET", "/minio/admin/v3/info-canned-policy?name=readpub&v=3", "")[0] == 400,
      "an unknown v is refused, not ignored")
check("readpub" in json.loads(root.policy_list()), "list-canned-policies lists it")
writepriv = doc({"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": ["arn:aws:s3:::priv/*"]})
root.policy_add("writepriv", policy=writepriv)
check(adm_err(lambda: root.policy_add("bad", policy={"Statement": []}))[0] == 400, "a policy without Version: 400")
check(adm_err(lambda: root.policy_info("nope")) == (404, "XMinioAdminNoSuchPolicy"), "missing policy: 404")

# Users: created with minio-py's sealed add-user; listed sealed.
root.user_add("alice", "alice-secret-1")
root.user_add("bob", "bob-secret-12")
info = json.loads(root.user_info("alice"))
check(info["status"] == "enabled" and "policyName" not in info, "user-info: enabled, no policy yet")
check(set(json.loads(root.user_list())) == {"alice", "bob"}, "list-users (sealed) names both")
check(adm_err(lambda: root.user_add("al", "alice-secret-1"))[1] == "XMinioAdminInvalidAccessKey",
      "an access key under 3 characters is refused")
check(adm_err(lambda: root.user_add("carol", "short"))[1] == "XMinioAdminInvalidSecretKey",
      "a secret under 8 characters is refused")
check(adm_err(lambda: root.user_add(ak, "whatever-secret")) == (403, "XMinioInvalidIAMCredentials"),
      "the root key cannot become a user")
check(adm_err(lambda: root.user_info("nobody")) == (404, "XMinioAdminNoSuchUser"), "user-info of nobody: 404")

alice = s3("alice", "alice-secret-1")
check(s3_code(get(alice, "pub", "x")) == "AccessDenied", "alice without a policy: denied")
r = json.loads(root.attach_policy(["readpub"], user="alice"))
check(r["policiesAttached"] == ["readpub"], "attach (sealed) reports what it attached")
check(adm_err(lambda: root.attach_policy(["readpub"], user="alice")) == (400, "XMinioAdminPolicyChangeAlreadyApplied"),
      "attaching it again changes nothing: 400")
check(json.loads(root.user_info("alice"))["policyName"] == "readpub", "user-info shows the policy")
check(get(alice, "pub", "x")() == b"body of x", "alice reads pub as readpub allows")
check(s3_code(listing(alice, "pub")) == "OK", "alice lists pub")
check(s3_code(put(alice, "pub", "y")) == "AccessDenied", "alice may not write pub")
check(s3_code(get(alice, "priv", "x")) == "AccessDenied", "alice may not read priv")
check(adm_err(lambda: root.policy_remove("readpub")) == (400, "XMinioIAMPolicyInUse"),
      "an attached policy is not removed")

# A user with no admin rights administers nothing, and another account sees nothing of ours.
alice_adm = admin("alice", "alice-secret-1")
check(adm_err(lambda: alice_adm.user_add("carol", "carol-secret-1"))[:1] == (403,), "alice may not add users")
check(adm_err(lambda: alice_adm.user_list())[:1] == (403,), "alice may not list users")
other = admin(ak2, sk2)
check(json.loads(other.user_list()) == {}, "another account lists no users of ours")
check(adm_err(lambda: other.user_info("alice")) == (404, "XMinioAdminNoSuchUser"), "nor finds alice")
check(adm_err(lambda: other.user_disable("alice"))[0] == 404, "nor disables her")

# Groups: created by update-group-members, policies set on them, status.
root.group_add("devs", ["bob"])  # minio-py 7.2.20 passes `members` through: a list
root.policy_set("writepriv", group="devs")
g = json.loads(root.group_info("devs"))
check(g["members"] == ["bob"] and g["policy"] == "writepriv" and g["status"] == "enabled", "group info")
check(json.loads(root.group_list()) == ["devs"], "groups lists it")
bob = s3("bob", "bob-secret-12")
check(s3_code(put(bob, "priv", "b")) == "OK", "bob writes priv through his group")
root.group_disable("devs")
check(json.loads(root.group_info("devs"))["status"] == "disabled", "the group is disabled")
check(s3_code(put(bob, "priv", "b2")) == "AccessDenied", "a disabled group's policy no longer applies")
root.group_enable("devs")
check(s3_code(put(bob, "priv", "b3")) == "OK", "enabled again, it applies again")
check(adm_err(lambda: root.group_remove("devs")) == (400, "XMinioAdminGroupNotEmpty"), "a group with members stays")
check(adm_err(lambda: root.policy_remove("writepriv")) == (400, "XMinioIAMPolicyInUse"), "its policy stays attached")
check(adm_err(lambda: root.group_add("devs", ["nobody"])) == (404, "XMinioAdminNoSuchUser"), "members must exist")

# A user's status.
root.user_disable("alice")
check(json.loads(root.user_info("alice"))["status"] == "disabled", "user-info: disabled")
check(s3_code(get(alice, "pub", "x")) == "InvalidAccessKeyId", "a disabled user's key signs nothing")
root.user_enable("alice")
check(s3_code(get(alice, "pub", "x")) == "OK", "enabled again, it signs again")

# Service accounts: a session policy narrows, never widens.
wide = doc({"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": ["arn:aws:s3:::pub/*", "arn:aws:s3:::priv/*"]})
creds = json.loads(alice_adm.add_service_account(access_key="alice-sa1", secret_key="alice-sa1-secret", policy=wide))
check(creds["credentials"]["accessKey"] == "alice-sa1", "add-service-account (sealed both ways) answers the credentials")
sa1 = s3("alice-sa1", "alice-sa1-secret")
check(s3_code(get(sa1, "pub", "x")) == "OK", "sa1 reads pub: both its parent and its session policy allow it")
check(s3_code(put(sa1, "pub", "z")) == "AccessDenied", "sa1 may not write pub: its session policy grants more than alice has")
check(s3_code(get(sa1, "priv", "x")) == "AccessDenied", "nor read priv")
check(s3_code(listing(sa1, "pub")) == "AccessDenied", "sa1 may not list pub: alice may, its session policy does not")
i = json.loads(alice_adm.get_service_account("alice-sa1"))
check(i["parentUser"] == "alice" and i["accountStatus"] == "on" and i["impliedPolicy"] is False
      and json.loads(i["policy"]) == wide, "info-service-account")

# The escalation MinIO fixed in 2025-10: a restricted service account makes an unrestricted
# one for its parent.
sa1_adm = admin("alice-sa1", "alice-sa1-secret")
check(adm_err(lambda: sa1_adm.add_service_account(access_key="newroot", secret_key="newroot123")) == (403, "AccessDenied"),
      "a service account whose session policy does not allow admin:CreateServiceAccount makes none")
check(s3_code(get(s3("newroot", "newroot123"), "pub", "x")) == "InvalidAccessKeyId", "and newroot does not exist")
check(adm_err(lambda: sa1_adm.user_add("alice", "stolen-secret-1")) == (403, "XMinioInvalidIAMCredentials"),
      "nor changes its parent's secret")
everything = doc({"Effect": "Allow", "Action": ["s3:*"], "Resource": ["*"]})
check(adm_err(lambda: sa1_adm.update_service_account(access_key="alice-sa1", policy=everything))[0] == 403,
      "nor widens its own session policy (MinIO's fix of 2024-01)")
# One whose session policy does allow it: what it makes inherits its session policy.
maker = doc({"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::pub/*"]},
            {"Effect": "Allow", "Action": ["admin:CreateServiceAccount"], "Resource": ["*"]})
alice_adm.add_service_account(access_key="alice-sa2", secret_key="alice-sa2-secret", policy=maker)
sa2_adm = admin("alice-sa2", "alice-sa2-secret")
sa2_adm.add_service_account(access_key="alice-sa3", secret_key="alice-sa3-secret")
sa3 = s3("alice-sa3", "alice-sa3-secret")
check(s3_code(get(sa3, "pub", "x")) == "OK", "sa3 (made by sa2, no policy of its own) reads pub")
check(s3_code(listing(sa3, "pub")) == "AccessDenied",
      "sa3 may not list pub: alice may, but sa2's session policy, which it inherited, does not")
accounts = json.loads(alice_adm.list_service_account("alice"))["accounts"]
check(sorted(a["accessKey"] for a in accounts) == ["alice-sa1", "alice-sa2", "alice-sa3"], "list-service-accounts")
# One store: IAM's Query API sees MinIO's user, and its key, but not its service accounts.
iam = boto3.client("iam", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                   region_name="us-east-1", config=Config(retries={"max_attempts": 1}))
check(iam.get_user(UserName="alice")["User"]["UserName"] == "alice", "IAM's GetUser finds MinIO's user")
check([k["AccessKeyId"] for k in iam.list_access_keys(UserName="alice")["AccessKeyMetadata"]] == ["alice"],
      "IAM's ListAccessKeys shows her one key, not her service accounts")
check([p["PolicyName"] for p in iam.list_attached_user_policies(UserName="alice")["AttachedPolicies"]] == ["readpub"],
      "and the canned policy as an attached managed policy")
check(adm_err(lambda: alice_adm.update_service_account(access_key="alice-sa1", status="off"))[0] == 403,
      "updating a service account needs admin:UpdateServiceAccount, even one's own")
root.update_service_account(access_key="alice-sa1", status="off")
check(s3_code(get(sa1, "pub", "x")) == "InvalidAccessKeyId", "a disabled service account signs nothing")
# MinIO's "no session policy": no Version and no Statement (minio-py sends no empty dict).
root.update_service_account(access_key="alice-sa1", status="on", policy={"Statement": None})
check(s3_code(listing(sa1, "pub")) == "OK", "with its session policy removed it has alice's rights (lists pub)")
check(json.loads(root.get_service_account("alice-sa1"))["impliedPolicy"] is True, "and reports an implied policy")
alice_adm.delete_service_account("alice-sa3")
check(s3_code(get(sa3, "pub", "x")) == "InvalidAccessKeyId", "a deleted service account signs nothing")
check(adm_err(lambda: alice_adm.get_service_account("alice-sa3")) == (404, "XMinioInvalidIAMCredentials"),
      "and is not found")
root.user_disable("alice")
check(s3_code(get(s3("alice-sa2", "alice-sa2-secret"), "pub", "x")) == "InvalidAccessKeyId",
      "a disabled user's service accounts sign nothing")
root.user_enable("alice")
check(adm_err(lambda: other.get_service_account("alice-sa2"))[0] == 404, "another account does not see them")

# The root's service accounts: the root's rights cut by the session policy.
rootsa = json.loads(root.add_service_account(policy=doc(
    {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::priv/*"]})))["credentials"]
check(len(rootsa["accessKey"]) == 20 and len(rootsa["secretKey"]) == 40, "generated credentials")
rsa = s3(rootsa["accessKey"], rootsa["secretKey"])
check(s3_code(get(rsa, "priv", "x")) == "OK", "the root's service account reads priv")
check(s3_code(put(rsa, "priv", "w")) == "AccessDenied", "but may not write it")
check(s3_code(get(rsa, "pub", "x")) == "AccessDenied", "nor read pub")
rsa_adm = admin(rootsa["accessKey"], rootsa["secretKey"])
check(adm_err(lambda: rsa_adm.add_service_account(access_key="newroot", secret_key="newroot123")) == (403, "AccessDenied"),
      "nor make an unrestricted service account of the root")
check(adm_err(lambda: rsa_adm.user_list())[0] == 403, "nor list users")

# Service accounts for another user: the root may make them; a user only for itself.
bob_sa = {"accessKey": "bob-sa", "secretKey": "bob-sa-secret", "targetUser": "bob"}
check(adm_err(lambda: add_sa_for(alice_adm, "alice-secret-1", bob_sa)) == (403, "AccessDenied"),
      "alice may not make a service account for bob")
check(add_sa_for(root, sk, bob_sa)["credentials"]["accessKey"] == "bob-sa", "the root makes one for bob")
check(s3_code(put(s3("bob-sa", "bob-sa-secret"), "priv", "b5")) == "OK", "bob's service account writes as bob")

# Removing a user removes what refers to it.
root.user_remove("bob")
check(s3_code(put(s3("bob-sa", "bob-sa-secret"), "priv", "b6")) == "InvalidAccessKeyId",
      "a removed user's service accounts are gone with it")
check(adm_err(lambda: root.user_info("bob")) == (404, "XMinioAdminNoSuchUser"), "remove-user")
check(s3_code(put(bob, "priv", "b4")) == "InvalidAccessKeyId", "a removed user's key signs nothing")
check(json.loads(root.group_info("devs"))["members"] == [], "and it left its group")
root.group_remove("devs")
check(adm_err(lambda: root.group_info("devs")) == (404, "XMinioAdminNoSuchGroup"), "an empty group is removed")
root.policy_remove("writepriv")
check(adm_err(lambda: root.policy_info("writepriv"))[0] == 404, "a detached policy is removed")
root.policy_unset("readpub", user="alice")
check(s3_code(get(alice, "pub", "x")) == "AccessDenied", "policy_unset (detach) takes alice's rights away")

# A user changes its own secret (allowed unless denied, as in MinIO); the old one stops.
alice_adm.user_add("alice", "alice-secret-2")
check(s3_code(listing(alice, "pub")) == "SignatureDoesNotMatch", "alice's old secret no longer signs")
root.attach_policy(["readpub"], user="alice")
check(s3_code(listing(s3("alice", "alice-secret-2"), "pub")) == "OK", "her new one does")

if failed:
    sys.exit(f"{len(failed)} checks failed")
print("minio_admin: all checks passed")
