"""AssumeRoleWithWebIdentity against a running grids3 and a real OpenID provider (node's
oidc-provider, tests/js/oidc_provider.mjs), issue 61: the provider registered through boto3's
`iam` client, ID tokens got through the provider's own login (tests/py/oidc_token.py), and
credentials from boto3's `sts` (unsigned), awscli, botocore's web-identity credential provider
(AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN) and minio-py's WebIdentityProvider; what the
trust policy's conditions on `<provider>:sub` and `:aud` let through, and AWS's errors.

Usage: python sts_web_identity.py ENDPOINT ROOT_KEY ROOT_SECRET ISSUER REDIRECT_URI
"""
import json
import os
import subprocess
import sys
import tempfile

import boto3
from botocore import UNSIGNED
from botocore.config import Config

from oidc_token import id_token
from s3check import check, client as s3_client, code

endpoint, ak, sk, issuer, redirect = sys.argv[1:6]
CFG = Config(retries={"max_attempts": 1, "mode": "standard"}, parameter_validation=False)
iam = boto3.client("iam", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                   region_name="us-east-1", config=CFG)
sts = boto3.client("sts", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                   region_name="us-east-1", config=CFG)
anon_sts = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(signature_version=UNSIGNED, retries={"max_attempts": 1},
                                      parameter_validation=False))
root = s3_client(endpoint, ak, sk)
root.create_bucket(Bucket="ci-artifacts")
root.create_bucket(Bucket="payroll")
root.put_object(Bucket="ci-artifacts", Key="a.txt", Body=b"artifact")
root.put_object(Bucket="payroll", Key="p.txt", Body=b"pay")
account = sts.get_caller_identity()["Account"]
host = issuer.split("://", 1)[1]

# Registering the provider: the URL policy holds.
check(code(lambda: iam.create_open_id_connect_provider(Url="http://10.0.0.1/", ClientIDList=["x"])) == "InvalidInput",
      "a private issuer address is refused (InvalidInput)")
check(code(lambda: iam.create_open_id_connect_provider(Url="ftp://idp.example", ClientIDList=["x"])) == "InvalidInput",
      "a non-https issuer is refused")
made = iam.create_open_id_connect_provider(Url=issuer, ClientIDList=["grids3-test"])
provider_arn = made["OpenIDConnectProviderArn"]
check(provider_arn == f"arn:aws:iam::{account}:oidc-provider/{host}", "CreateOpenIDConnectProvider: AWS's ARN")
got = iam.get_open_id_connect_provider(OpenIDConnectProviderArn=provider_arn)
check(got["Url"] == host and got["ClientIDList"] == ["grids3-test"], "GetOpenIDConnectProvider")
check([p["Arn"] for p in iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]] == [provider_arn],
      "ListOpenIDConnectProviders")
check(code(lambda: iam.create_open_id_connect_provider(Url=issuer, ClientIDList=["y"])) == "EntityAlreadyExists",
      "one provider per issuer")

trust = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"Federated": provider_arn}, "Action": "sts:AssumeRoleWithWebIdentity",
    "Condition": {"StringEquals": {f"{host}:sub": "alice", f"{host}:aud": "grids3-test"}}}]}
iam.create_role(RoleName="ci", AssumeRolePolicyDocument=json.dumps(trust))
iam.put_role_policy(RoleName="ci", PolicyName="artifacts", PolicyDocument=json.dumps({
    "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
                                            "Resource": "arn:aws:s3:::ci-artifacts/*"}]}))
role_arn = f"arn:aws:iam::{account}:role/ci"

alice = id_token(issuer, "alice", redirect)
bob = id_token(issuer, "bob", redirect)

# The machine-to-machine flow: the token, unsigned, for credentials.
r = anon_sts.assume_role_with_web_identity(RoleArn=role_arn, RoleSessionName="job-1", WebIdentityToken=alice)
c = r["Credentials"]
check(c["AccessKeyId"].startswith("ASIA") and r["SubjectFromWebIdentityToken"] == "alice"
      and r["Audience"] == "grids3-test", "AssumeRoleWithWebIdentity (unsigned): credentials, subject, audience")
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=c["AccessKeyId"],
                  aws_secret_access_key=c["SecretAccessKey"], aws_session_token=c["SessionToken"],
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
check(s3.get_object(Bucket="ci-artifacts", Key="a.txt")["Body"].read() == b"artifact", "the session reads one bucket")
check(code(lambda: s3.get_object(Bucket="payroll", Key="p.txt")) == "AccessDenied", "and is refused another")

# The trust's conditions: another user's token gets nothing.
check(code(lambda: anon_sts.assume_role_with_web_identity(RoleArn=role_arn, RoleSessionName="x1",
                                                          WebIdentityToken=bob)) == "AccessDenied",
      "a token whose sub the trust does not name: AccessDenied")
check(code(lambda: anon_sts.assume_role_with_web_identity(RoleArn=role_arn, RoleSessionName="x1",
                                                          WebIdentityToken="garbage")) == "InvalidIdentityToken",
      "garbage: InvalidIdentityToken")
tampered = alice.rsplit(".", 1)[0] + "." + ("A" * 40)
check(code(lambda: anon_sts.assume_role_with_web_identity(RoleArn=role_arn, RoleSessionName="x1",
                                                          WebIdentityToken=tampered)) == "InvalidIdentityToken",
      "a bad signature: InvalidIdentityToken")
# Audience: with the client id removed, the same token is for nobody registered.
iam.remove_client_id_from_open_id_connect_provider(OpenIDConnectProviderArn=provider_arn, ClientID="grids3-test")
check(code(lambda: anon_sts.assume_role_with_web_identity(RoleArn=role_arn, RoleSessionName="x1",
                                                          WebIdentityToken=alice)) == "InvalidIdentityToken",
      "a token for a client id not registered: InvalidIdentityToken")
iam.add_client_id_to_open_id_connect_provider(OpenIDConnectProviderArn=provider_arn, ClientID="grids3-test")

# awscli, unmodified.
env = dict(os.environ, AWS_DEFAULT_REGION="us-east-1")
env.pop("AWS_ACCESS_KEY_ID", None)
env.pop("AWS_SECRET_ACCESS_KEY", None)
aws = os.path.join(os.path.dirname(sys.executable), "aws")
out = subprocess.run([aws, "sts", "assume-role-with-web-identity", "--role-arn", role_arn, "--role-session-name",
                      "cli", "--web-identity-token", alice, "--endpoint-url", endpoint, "--output", "json"],
                     capture_output=True, text=True, env=env)
check(out.returncode == 0 and json.loads(out.stdout)["Credentials"]["AccessKeyId"].startswith("ASIA"),
      f"aws sts assume-role-with-web-identity ({out.stderr.strip()})")

# botocore's web identity provider: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN.
tok = tempfile.NamedTemporaryFile("w", delete=False, suffix=".jwt")
tok.write(alice)
tok.close()
cfg = tempfile.NamedTemporaryFile("w", delete=False, suffix=".cfg")
cfg.write(f"[default]\nregion = us-east-1\nendpoint_url = {endpoint}\n")
cfg.close()
for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
    os.environ.pop(k, None)
os.environ.update({"AWS_WEB_IDENTITY_TOKEN_FILE": tok.name, "AWS_ROLE_ARN": role_arn,
                   "AWS_ROLE_SESSION_NAME": "provider", "AWS_CONFIG_FILE": cfg.name})
prov = boto3.Session().client("s3", config=Config(s3={"addressing_style": "path"}))
check(prov.get_object(Bucket="ci-artifacts", Key="a.txt")["Body"].read() == b"artifact",
      "boto3's web-identity credential provider gets and uses a session")
check(code(lambda: prov.get_object(Bucket="payroll", Key="p.txt")) == "AccessDenied", "and is refused the other bucket")
for k in ("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_CONFIG_FILE"):
    os.environ.pop(k)

# minio-py's WebIdentityProvider.
from minio import Minio
from minio.credentials import WebIdentityProvider
wp = WebIdentityProvider(jwt_provider_func=lambda: {"id_token": alice, "expires_in": 3600},
                         sts_endpoint=endpoint, role_arn=role_arn, role_session_name="minio")
mc = Minio(endpoint.split("://", 1)[1], credentials=wp, secure=False, region="us-east-1")
check(mc.get_object("ci-artifacts", "a.txt").read() == b"artifact", "minio-py's WebIdentityProvider")

# A deleted provider verifies nothing more.
iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=provider_arn)
check(code(lambda: anon_sts.assume_role_with_web_identity(RoleArn=role_arn, RoleSessionName="x1",
                                                          WebIdentityToken=alice)) == "InvalidIdentityToken",
      "after DeleteOpenIDConnectProvider: InvalidIdentityToken")

print("sts_web_identity: all checks passed")
