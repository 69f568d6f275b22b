"""The IAM protocol layer's answers (src/iam/xml.rs) as botocore reads them.

Two checks over one sample answer per operation (dumped by the ignored Rust test
`iam::xml::tests::dump_samples`):

1. each sample through botocore's own `QueryParser` against the operation's output shape, then
   the `json_decode_policies` handler boto3 registers for IAM (policy documents as dicts);
2. a real boto3 `iam` client against a tiny local HTTP server that answers each Action with its
   sample: the whole client pipeline (request serialisation, `text/xml` answer, parsing,
   handlers, modelled exceptions). The request bodies boto3 sent are written next to the
   samples (`--bodies FILE`) so the request parser can be tested against real ones.

Usage:
  IAM_SAMPLES=/tmp/iam_samples.json cargo test --lib iam::xml::tests::dump_samples -- --ignored
  python tests/py/iam_shapes.py /tmp/iam_samples.json [--bodies /tmp/iam_bodies.json]
"""
import json
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import botocore.exceptions
import botocore.handlers
import botocore.parsers
import botocore.session

data = json.load(open(sys.argv[1]))
samples, DOC, RID = data["samples"], json.loads(data["document"]), data["rid"]
bodies_out = sys.argv[sys.argv.index("--bodies") + 1] if "--bodies" in sys.argv else None

model = botocore.session.get_session().get_service_model("iam")
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append(f"{name}: {detail}")
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f"  {detail}"))


def parse(op, xml, status=200):
    op_model = model.operation_model(op)
    parsed = botocore.parsers.QueryParser().parse(
        {"body": xml.encode(), "headers": {}, "status_code": status}, op_model.output_shape
    )
    botocore.handlers.json_decode_policies(parsed, op_model)
    return parsed


def page(d, truncated_marker):
    if truncated_marker:
        return d.get("IsTruncated") is True and d.get("Marker") == truncated_marker
    return d.get("IsTruncated") is False and "Marker" not in d


# What boto3 users read, per operation, from the parsed dict.
EXPECT = {
    "CreateUser": lambda d: d["User"]["UserName"] == "alice" and d["User"]["Path"] == "/eng/"
    and d["User"]["Arn"].endswith(":user/eng/alice") and d["User"]["CreateDate"].year == 2026
    and d["User"]["Tags"] == [{"Key": "team", "Value": "a&b"}, {"Key": "env", "Value": ""}],
    "GetUser": lambda d: d["User"]["UserId"] == "AIDAALICEEXAMPLE0000" and len(d["User"]["Tags"]) == 2,
    "ListUsers": lambda d: [u["UserName"] for u in d["Users"]] == ["alice", "bob"]
    and "Tags" not in d["Users"][0] and page(d, "next-1"),
    "ListUserTags": lambda d: d["Tags"][0] == {"Key": "team", "Value": "a&b"} and page(d, None),
    "CreateAccessKey": lambda d: d["AccessKey"]["SecretAccessKey"] == "wJalr/K7MDENG+bPxRfiCY"
    and d["AccessKey"]["AccessKeyId"] == "AKIAIOSFODNN7EXAMPLE" and d["AccessKey"]["Status"] == "Active",
    "ListAccessKeys": lambda d: d["AccessKeyMetadata"][0]["AccessKeyId"] == "AKIAIOSFODNN7EXAMPLE"
    and "SecretAccessKey" not in d["AccessKeyMetadata"][0] and page(d, None),
    "GetAccessKeyLastUsed": lambda d: d["UserName"] == "alice"
    and d["AccessKeyLastUsed"] == {"ServiceName": "N/A", "Region": "N/A"},
    "GetAccessKeyLastUsed#used": lambda d: d["AccessKeyLastUsed"]["ServiceName"] == "s3"
    and d["AccessKeyLastUsed"]["Region"] == "us-east-1" and d["AccessKeyLastUsed"]["LastUsedDate"].hour == 13,
    "CreateGroup": lambda d: d["Group"]["GroupName"] == "devs" and d["Group"]["GroupId"],
    "GetGroup": lambda d: d["Group"]["GroupName"] == "devs" and d["Users"][0]["UserName"] == "alice"
    and page(d, "next-2"),
    "ListGroups": lambda d: d["Groups"][0]["Arn"].endswith(":group/devs") and page(d, None),
    "ListGroupsForUser": lambda d: d["Groups"][0]["GroupName"] == "devs" and page(d, None),
    "CreatePolicy": lambda d: d["Policy"]["DefaultVersionId"] == "v2" and d["Policy"]["AttachmentCount"] == 3
    and d["Policy"]["IsAttachable"] is True and d["Policy"]["Description"] == "read <logs> & more"
    and d["Policy"]["Tags"] == [{"Key": "team", "Value": "ops"}],
    "GetPolicy": lambda d: d["Policy"]["Arn"] == "arn:aws:iam::123456789012:policy/ops/ReadLogs"
    and d["Policy"]["PermissionsBoundaryUsageCount"] == 0 and d["Policy"]["UpdateDate"].hour == 10,
    "ListPolicies": lambda d: d["Policies"][0]["PolicyName"] == "ReadLogs" and "Description" not in d["Policies"][0]
    and page(d, "next-3"),
    "CreatePolicyVersion": lambda d: d["PolicyVersion"]["VersionId"] == "v3"
    and d["PolicyVersion"]["IsDefaultVersion"] is False and "Document" not in d["PolicyVersion"],
    "GetPolicyVersion": lambda d: d["PolicyVersion"]["Document"] == DOC and d["PolicyVersion"]["IsDefaultVersion"] is True,
    "ListPolicyVersions": lambda d: [v["VersionId"] for v in d["Versions"]] == ["v2", "v1"] and page(d, None),
    "ListAttachedUserPolicies": lambda d: d["AttachedPolicies"][0]["PolicyArn"].endswith("policy/ops/ReadLogs")
    and page(d, None),
    "ListAttachedGroupPolicies": lambda d: d["AttachedPolicies"][0]["PolicyName"] == "ReadLogs" and page(d, "next-4"),
    "ListEntitiesForPolicy": lambda d: d["PolicyGroups"] == [{"GroupName": "devs", "GroupId": "AGPAEXAMPLE000000001"}]
    and d["PolicyUsers"] == [{"UserName": "alice", "UserId": "AIDAALICEEXAMPLE0000"}] and d["PolicyRoles"] == []
    and page(d, None),
    "GetUserPolicy": lambda d: d["PolicyDocument"] == DOC and d["UserName"] == "alice" and d["PolicyName"] == "inline-1",
    "GetGroupPolicy": lambda d: d["PolicyDocument"] == DOC and d["GroupName"] == "devs",
    "ListUserPolicies": lambda d: d["PolicyNames"] == ["inline-1", "inline-2"] and page(d, None),
    "ListGroupPolicies": lambda d: d["PolicyNames"] == ["inline-1", "inline-2"] and page(d, "next-5"),
}

print("== botocore QueryParser + json_decode_policies")
for key, xml in samples.items():
    if key == "#error":
        continue
    op = key.split("#")[0]
    d = parse(op, xml)
    rid_ok = d.get("ResponseMetadata", {}).get("RequestId") == RID
    if key in EXPECT:
        try:
            ok = bool(EXPECT[key](d))
        except Exception as e:  # a missing key is a failed expectation
            ok = False
            d = {"exception": repr(e), **d}
        check(key, ok and rid_ok, repr(d))
    else:
        # An operation without output: no Result element, botocore finds nothing but metadata.
        has_output = model.operation_model(op).output_shape is not None
        check(key, rid_ok and not has_output and set(d) == {"ResponseMetadata"}, repr(d))
missing = set(EXPECT) - set(samples)
check("every expected shape was dumped", not missing, repr(missing))

d = parse("GetUser", samples["#error"], 404)
check("#error parsed", d["Error"]["Code"] == "NoSuchEntity" and d["Error"]["Type"] == "Sender"
      and d["ResponseMetadata"]["RequestId"] == RID, repr(d))

print("== boto3 iam client against a server answering the samples")
sent = []
override = {}


class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"])).decode()
        action = urllib.parse.parse_qs(body)["Action"][0]
        sent.append((action, body))
        key = override.pop("key", action)
        status = 404 if key == "#error" else 200
        out = samples[key].encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
iam = boto3.client("iam", endpoint_url=f"http://127.0.0.1:{srv.server_port}", region_name="us-east-1",
                   aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret")
ARN = "arn:aws:iam::123456789012:policy/ops/ReadLogs"
TAGS = [{"Key": "team", "Value": "a+b c"}, {"Key": "env", "Value": ""}]  # valid tag values: no &
calls = [
    ("CreateUser", dict(UserName="alice", Path="/eng/", Tags=TAGS)),
    ("GetUser", dict(UserName="alice")),
    ("ListUsers", dict(PathPrefix="/eng/", MaxItems=2)),
    ("ListUserTags", dict(UserName="alice")),
    ("CreateAccessKey", dict(UserName="alice")),
    ("ListAccessKeys", dict(UserName="alice")),
    ("GetAccessKeyLastUsed", dict(AccessKeyId="AKIAIOSFODNN7EXAMPLE")),
    ("GetAccessKeyLastUsed#used", dict(AccessKeyId="AKIAIOSFODNN7EXAMPLE")),
    ("CreateGroup", dict(GroupName="devs")),
    ("GetGroup", dict(GroupName="devs")),
    ("ListGroups", dict()),
    ("ListGroupsForUser", dict(UserName="alice")),
    ("CreatePolicy", dict(PolicyName="ReadLogs", Path="/ops/", PolicyDocument=json.dumps(DOC),
                          Description="read <logs> & more", Tags=[{"Key": "team", "Value": "ops"}])),
    ("GetPolicy", dict(PolicyArn=ARN)),
    ("ListPolicies", dict(Scope="Local", OnlyAttached=True)),
    ("CreatePolicyVersion", dict(PolicyArn=ARN, PolicyDocument=json.dumps(DOC), SetAsDefault=False)),
    ("GetPolicyVersion", dict(PolicyArn=ARN, VersionId="v2")),
    ("ListPolicyVersions", dict(PolicyArn=ARN)),
    ("ListAttachedUserPolicies", dict(UserName="alice")),
    ("ListAttachedGroupPolicies", dict(GroupName="devs")),
    ("ListEntitiesForPolicy", dict(PolicyArn=ARN)),
    ("GetUserPolicy", dict(UserName="alice", PolicyName="inline-1")),
    ("GetGroupPolicy", dict(GroupName="devs", PolicyName="inline-1")),
    ("ListUserPolicies", dict(UserName="alice")),
    ("ListGroupPolicies", dict(GroupName="devs")),
    ("UpdateUser", dict(UserName="alice", NewUserName="alice2", NewPath="/x/")),
    ("DeleteUser", dict(UserName="alice")),
    ("TagUser", dict(UserName="alice", Tags=TAGS)),
    ("UntagUser", dict(UserName="alice", TagKeys=["team", "env"])),
    ("UpdateAccessKey", dict(UserName="alice", AccessKeyId="AKIAIOSFODNN7EXAMPLE", Status="Inactive")),
    ("DeleteAccessKey", dict(UserName="alice", AccessKeyId="AKIAIOSFODNN7EXAMPLE")),
    ("DeleteGroup", dict(GroupName="devs")),
    ("AddUserToGroup", dict(GroupName="devs", UserName="alice")),
    ("RemoveUserFromGroup", dict(GroupName="devs", UserName="alice")),
    ("DeletePolicy", dict(PolicyArn=ARN)),
    ("SetDefaultPolicyVersion", dict(PolicyArn=ARN, VersionId="v1")),
    ("DeletePolicyVersion", dict(PolicyArn=ARN, VersionId="v1")),
    ("AttachUserPolicy", dict(UserName="alice", PolicyArn=ARN)),
    ("DetachUserPolicy", dict(UserName="alice", PolicyArn=ARN)),
    ("AttachGroupPolicy", dict(GroupName="devs", PolicyArn=ARN)),
    ("DetachGroupPolicy", dict(GroupName="devs", PolicyArn=ARN)),
    ("PutUserPolicy", dict(UserName="alice", PolicyName="inline-1", PolicyDocument=json.dumps(DOC))),
    ("DeleteUserPolicy", dict(UserName="alice", PolicyName="inline-1")),
    ("PutGroupPolicy", dict(GroupName="devs", PolicyName="inline-1", PolicyDocument=json.dumps(DOC))),
    ("DeleteGroupPolicy", dict(GroupName="devs", PolicyName="inline-1")),
]
snake = lambda s: "".join("_" + c.lower() if c.isupper() else c for c in s).lstrip("_")
for key, kwargs in calls:
    op = key.split("#")[0]
    override["key"] = key
    try:
        d = getattr(iam, snake(op))(**kwargs)
    except Exception as e:
        check("client " + key, False, repr(e))
        continue
    meta = d.pop("ResponseMetadata")
    ok = meta["RequestId"] == RID and meta["HTTPStatusCode"] == 200
    if key in EXPECT:
        try:
            ok = ok and bool(EXPECT[key](d))
        except Exception as e:
            ok, d = False, {"exception": repr(e), **d}
    else:
        ok = ok and d == {}
    check("client " + key, ok, repr(d))

override["key"] = "#error"
try:
    iam.get_user(UserName="bob")
    check("client #error raises NoSuchEntityException", False, "no exception")
except iam.exceptions.NoSuchEntityException as e:
    r = e.response
    check("client #error raises NoSuchEntityException",
          r["Error"]["Code"] == "NoSuchEntity" and r["Error"]["Message"] == "The user with name bob cannot be found."
          and r["ResponseMetadata"]["HTTPStatusCode"] == 404 and r["ResponseMetadata"]["RequestId"] == RID, repr(r))
srv.shutdown()

if bodies_out:
    json.dump(sent, open(bodies_out, "w"), indent=1)
    print(f"{len(sent)} request bodies written to {bodies_out}")
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
