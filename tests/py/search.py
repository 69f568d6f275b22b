"""Metadata search (issue 63) through boto3, against a brute-force filter in Python.

N objects with random sizes, content types, user metadata and tags; 50 random queries, each
paged through to its end with boto3's own paginator; the keys found must equal what Python
finds in its model of the bucket. Again after overwrites, deletes and tagging changes, and
again once the bucket is versioned and overwritten and deleted some more (a search finds
current objects only). Also: bad queries answer 400 InvalidArgument naming the position.

The search parameter is added by an event hook, as docs/search.md shows for boto3.

Usage: python search.py ENDPOINT KEY SECRET BUCKET N SEED
Prints `RESULT {...}`.
"""
import json
import random
import re
import sys
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, ak, sk, bucket, n, seed = sys.argv[1:7]
# Fields to declare search indexes on once the bucket is written (comma-separated; none when
# absent): the same queries are then read by the indexes where their shape allows.
indexed = [f for f in (sys.argv[7] if len(sys.argv) > 7 else "").split(",") if f]
n, rnd = int(n), random.Random(int(seed))
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                  region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, max_pool_connections=32,
                                retries={"max_attempts": 3}))
started = time.time()


def progress(what):
    """A phase's start on stderr, so that a long run shows where its time goes."""
    print(f"[{time.time() - started:7.1f}s] {what}", file=sys.stderr, flush=True)


def search(query, **kwargs):
    """Every key a search finds, following its pages (boto3's paginator, NextMarker)."""
    def add(params, **_):
        sep = "&" if "?" in params["url"] else "?"
        params["url"] += sep + "search=" + urllib.parse.quote(query, safe="")
    s3.meta.events.register("before-call.s3.ListObjects", add)
    try:
        keys, pages = [], 0
        for page in s3.get_paginator("list_objects").paginate(Bucket=bucket, **kwargs):
            pages += 1
            keys += [o["Key"] for o in page.get("Contents", [])]
        return keys, pages
    finally:
        s3.meta.events.unregister("before-call.s3.ListObjects", add)


def search_versions(query, **kwargs):
    """Every (key, version, latest) a search of versions finds, following its pages."""
    def add(params, **_):
        sep = "&" if "?" in params["url"] else "?"
        params["url"] += sep + "search=" + urllib.parse.quote(query, safe="")
    s3.meta.events.register("before-call.s3.ListObjectVersions", add)
    try:
        found = []
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, **kwargs):
            found += [(v["Key"], v["VersionId"], v["IsLatest"]) for v in page.get("Versions", [])]
            assert not page.get("DeleteMarkers"), page
        return found
    finally:
        s3.meta.events.unregister("before-call.s3.ListObjectVersions", add)


COLORS = ["red", "green", "blue", "Blue"]
TYPES = ["text/plain", "image/png", "application/json", None]
model = {}


def attrs():
    meta = {}
    if rnd.random() < 0.8:
        meta["color"] = rnd.choice(COLORS)
    if rnd.random() < 0.6:
        meta["customer"] = str(rnd.randint(1, 40))
    tags = {}
    if rnd.random() < 0.7:
        tags["type"] = rnd.choice(["a", "b", "c"])
    if rnd.random() < 0.3:
        tags["project"] = rnd.choice(["apollo", "gemini"])
    return {"size": rnd.randint(0, 3000), "ct": rnd.choice(TYPES), "meta": meta, "tags": tags}


def put(key, a):
    kw = {"Metadata": a["meta"]}
    if a["ct"]:
        kw["ContentType"] = a["ct"]
    if a["tags"]:
        kw["Tagging"] = urllib.parse.urlencode(a["tags"])
    s3.put_object(Bucket=bucket, Key=key, Body=b"x" * a["size"], **kw)


def write_all(items):
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda kv: put(*kv), items))
    for k, a in items:
        model[k] = dict(a)


def refresh_dates():
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            model[o["Key"]]["date"] = int(round(o["LastModified"].timestamp() * 1000))


def value(o, field):
    """An object's value of a field, as a search sees it (None: missing)."""
    if field == "key":
        return o["key"]
    if field == "size":
        return o["size"]
    if field == "content-type":
        return o["ct"] or "binary/octet-stream"
    if field.startswith("x-amz-meta-"):
        return o["meta"].get(field[len("x-amz-meta-"):])
    if field.startswith("tags."):
        return o["tags"].get(field[5:])
    if field == "last-modified":
        return o["date"]
    raise ValueError(field)


def holds(q, o):
    kind = q[0]
    if kind == "and":
        return all(holds(x, o) for x in q[1:])
    if kind == "or":
        return any(holds(x, o) for x in q[1:])
    _, field, op, v = q
    x = value(o, field)
    if op == "LIKE":
        body, flags = v, 0
        if v.startswith("/") and v.rfind("/") > 0:
            body, fl = v[1:v.rfind("/")], v[v.rfind("/") + 1:]
            flags = re.I if fl == "i" else 0
        return isinstance(x, str) and re.search(body, x, flags) is not None
    if x is None:
        return op == "!="
    return {"=": x == v, "!=": x != v, "<": x < v, "<=": x <= v, ">": x > v, ">=": x >= v}[op]


def text(q):
    kind = q[0]
    if kind in ("and", "or"):
        return "(" + f" {kind.upper()} ".join(text(x) for x in q[1:]) + ")"
    _, field, op, v = q
    if field == "last-modified":
        lit = "'" + time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(v // 1000)) + \
            (".%03dZ" % (v % 1000)) + "'"
    elif isinstance(v, int):
        lit = str(v)
    else:
        lit = "'" + v.replace("'", "''") + "'"
    return f"{field} {op} {lit}"


def atom(dates):
    f = rnd.choice(["key", "size", "content-type", "x-amz-meta-color", "x-amz-meta-customer",
                    "tags.type", "tags.project", "last-modified"])
    op = rnd.choice(["=", "!=", "<", "<=", ">", ">="])
    if f == "key":
        if rnd.random() < 0.4:
            return ("c", f, "LIKE", rnd.choice(["^k/00", "7$", "/^K/1/i", "2.*3"]))
        return ("c", f, op, rnd.choice(sorted(model)) if model else "k/0")
    if f == "size":
        return ("c", f, op, rnd.randint(0, 3000))
    if f == "last-modified":
        return ("c", f, rnd.choice(["<", ">="]), rnd.choice(dates))
    if f == "content-type":
        if rnd.random() < 0.3:
            return ("c", f, "LIKE", rnd.choice(["^image/", "/JSON/i", "octet"]))
        return ("c", f, rnd.choice(["=", "!="]),
                rnd.choice(["text/plain", "image/png", "binary/octet-stream"]))
    if f == "x-amz-meta-color":
        if rnd.random() < 0.3:
            return ("c", f, "LIKE", "/^blue$/i")
        return ("c", f, rnd.choice(["=", "!="]), rnd.choice(COLORS))
    if f == "x-amz-meta-customer":
        return ("c", f, op, str(rnd.randint(1, 40)))
    if f == "tags.type":
        return ("c", f, rnd.choice(["=", "!=", "<"]), rnd.choice(["a", "b", "c"]))
    return ("c", f, rnd.choice(["=", "!="]), rnd.choice(["apollo", "gemini"]))


def query(dates, depth=0):
    r = rnd.random()
    if depth < 2 and r < 0.45:
        return ("and" if rnd.random() < 0.5 else "or",) + tuple(
            query(dates, depth + 1) for _ in range(rnd.randint(2, 3)))
    return atom(dates)


def check(phase, queries, dates, result):
    bad = []
    for q in queries:
        want = sorted(k for k, o in model.items() if holds(q, dict(o, key=k)))
        got, pages = search(text(q), MaxKeys=400 if rnd.random() < 0.5 else 1000)
        if got != want:
            bad.append({"q": text(q), "want": len(want), "got": len(got),
                        "missing": sorted(set(want) - set(got))[:5],
                        "extra": sorted(set(got) - set(want))[:5],
                        "dup": len(got) - len(set(got))})
    result[phase] = {"queries": len(queries), "mismatches": bad}


result = {}
s3.create_bucket(Bucket=bucket)
progress(f"writing {n} objects")
t0 = time.time()
write_all([(f"k/{i:05d}", attrs()) for i in range(n)])
result["put_seconds"] = round(time.time() - t0, 1)
refresh_dates()


def admin(method, path, body=None):
    """A call to the admin API, signed as the root key (SigV4, with the nonce it asks for)."""
    import urllib.error
    import urllib.request
    import uuid
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    data = json.dumps(body).encode() if body is not None else b""
    req = AWSRequest(method=method, url=endpoint + path, data=data,
                     headers={"content-type": "application/json",
                              "x-grids3-nonce": uuid.uuid4().hex})
    S3SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(endpoint + path, data=data or None, method=method,
                               headers=dict(req.headers.items()))
    try:
        with urllib.request.urlopen(r) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{method} {path}: {e.code} {e.read()!r}") from None


if indexed:
    progress(f"declaring indexes on {indexed}")
    path = f"/_grids3/admin/buckets/{bucket}/search-indexes"
    admin("PUT", path, {"fields": indexed})
    for _ in range(600):
        fields = admin("GET", path)["fields"]
        if all(f["state"] == "ready" for f in fields):
            break
        time.sleep(0.2)
    result["indexes"] = [f["field"] for f in fields if f["state"] == "ready"]
    result["plans"] = {q: admin("POST", f"/_grids3/admin/buckets/{bucket}/search-explain",
                                {"query": q})["explain"]["plan"]
                       for q in ["x-amz-meta-customer = '7'", "tags.type = 'a' AND size > 10"]}
dates = sorted(o["date"] for o in model.values())
dates = [dates[len(dates) // 4], dates[len(dates) // 2], dates[-1] + 1]
queries = [query(dates) for _ in range(50)]
progress("first searches")
t0 = time.time()
check("first", queries, dates, result)
result["search_seconds"] = round(time.time() - t0, 1)
# Before versioning, a search of versions finds each current object as its null version.
result["null_versions"] = {"queries": 10, "mismatches": [
    text(q) for q in queries[:10]
    if search_versions(text(q), MaxKeys=300)
    != [(k, "null", True) for k in sorted(model) if holds(q, dict(model[k], key=k))]]}

# Overwrites, deletes, tagging changes.
progress("overwrites, deletes and tagging")
keys = sorted(model)
rnd.shuffle(keys)
tenth = max(1, n // 10)
write_all([(k, attrs()) for k in keys[:tenth]])
for k in keys[tenth:2 * tenth]:
    s3.delete_object(Bucket=bucket, Key=k)
    del model[k]
for k in keys[2 * tenth:3 * tenth]:
    tags = attrs()["tags"]
    s3.put_object_tagging(Bucket=bucket, Key=k, Tagging={
        "TagSet": [{"Key": a, "Value": b} for a, b in tags.items()]})
    model[k]["tags"] = tags
refresh_dates()
progress("searches after changes")
check("changed", queries, dates, result)

# Versioned: overwrites keep old versions, deletes leave markers; only current objects count.
s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
progress("versioning enabled; waiting for the version index")
# A large bucket's version index is built in the background; searches meanwhile are exact
# but check each key against it (tests/it/index_build.rs). This phase checks the built index.
for _ in range(18000):
    if admin("GET", f"/_grids3/admin/buckets/{bucket}").get("versionsIndexed"):
        break
    time.sleep(0.1)
progress("versioned overwrites and deletes")
keys = sorted(model)
rnd.shuffle(keys)
write_all([(k, attrs()) for k in keys[:tenth]])
for k in keys[tenth:2 * tenth]:
    s3.delete_object(Bucket=bucket, Key=k)
    del model[k]
refresh_dates()
progress("versioned searches")
check("versioned", queries, dates, result)

# A search of versions (`?versions&search=`): every version that is an object, in
# ListObjectVersions' order, against a model read version by version through HEAD and
# GetObjectTagging; delete markers are never found.
progress("reading every version for the model")
listed = []
for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
    listed += [(v["Key"], v["VersionId"], v["IsLatest"]) for v in page.get("Versions", [])]


def version_attrs(kvl):
    key, vid, _ = kvl
    h = s3.head_object(Bucket=bucket, Key=key, VersionId=vid)
    t = s3.get_object_tagging(Bucket=bucket, Key=key, VersionId=vid)["TagSet"]
    return {"key": key, "size": h["ContentLength"],
            "ct": None if h["ContentType"] == "binary/octet-stream" else h["ContentType"],
            "meta": h["Metadata"], "tags": {x["Key"]: x["Value"] for x in t},
            "date": int(round(h["LastModified"].timestamp() * 1000))}


with ThreadPoolExecutor(16) as ex:
    vmodel = list(zip(listed, ex.map(version_attrs, listed)))
# HEAD's Last-Modified has whole seconds: dates compared with what a listing says instead.
dates_of = {}
for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
    for v in page.get("Versions", []):
        dates_of[(v["Key"], v["VersionId"])] = int(round(v["LastModified"].timestamp() * 1000))
progress("searches of versions")
bad = []
for q in queries:
    want = [kvl for kvl, o in vmodel if holds(q, dict(o, date=dates_of[kvl[:2]]))]
    got = search_versions(text(q), MaxKeys=300 if rnd.random() < 0.5 else 1000)
    if got != want:
        bad.append({"q": text(q), "want": len(want), "got": len(got),
                    "missing": [list(x) for x in want if x not in got][:5],
                    "extra": [list(x) for x in got if x not in want][:5]})
result["versions"] = {"queries": len(queries), "mismatches": bad, "versions": len(vmodel),
                      "old": sum(1 for kvl in listed if not kvl[2])}

# Refusals name the position.
progress("refusals and rights")
errors = {}
for q in ["colour = red", "key = 'open", "size > ten", "key LIKE '(a+)+$'"]:
    try:
        search(q)
        errors[q] = "accepted"
    except ClientError as e:
        errors[q] = [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"],
                     e.response["Error"]["Message"]]
result["errors"] = errors

# Authorization: a user with s3:ListBucket limited to a prefix, without GetObject, matches
# metadata as missing; outside the prefix it is refused; a user without ListBucket too.
iam = boto3.client("iam", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                   region_name="us-east-1")
arn = f"arn:aws:s3:::{bucket}"
policies = {
    "lister": [{"Effect": "Allow", "Action": "s3:ListBucket", "Resource": arn,
                "Condition": {"StringLike": {"s3:prefix": "k/001*"}}}],
    "reader": [{"Effect": "Allow", "Action": "s3:ListBucket", "Resource": arn},
               {"Effect": "Allow", "Action": "s3:GetObject", "Resource": arn + "/*"}],
    "nobody": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": arn + "/*"}],
}
clients = {}
for name, st in policies.items():
    iam.create_user(UserName=f"search-{bucket}-{name}")
    iam.put_user_policy(UserName=f"search-{bucket}-{name}", PolicyName="p",
                        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": st}))
    k = iam.create_access_key(UserName=f"search-{bucket}-{name}")["AccessKey"]
    clients[name] = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=k["AccessKeyId"],
                                 aws_secret_access_key=k["SecretAccessKey"], region_name="us-east-1",
                                 config=Config(s3={"addressing_style": "path"},
                                               retries={"max_attempts": 1}))


def search_as(name, q, versions=False, **kwargs):
    global s3
    saved, s3 = s3, clients[name]
    try:
        if versions:
            return search_versions(q, **kwargs)
        return sorted(search(q, **kwargs)[0])
    except ClientError as e:
        return e.response["Error"]["Code"]
    finally:
        s3 = saved


under = sorted(k for k in model if k.startswith("k/001"))
red = sorted(k for k in model if model[k]["meta"].get("color") == "red")
auth = {
    # Metadata unreadable: missing, so `=` finds nothing and `!=` everything under the prefix.
    "lister_eq": search_as("lister", "x-amz-meta-color = red", Prefix="k/001") == [],
    "lister_ne": search_as("lister", "x-amz-meta-color != red", Prefix="k/001") == under,
    "lister_outside": search_as("lister", "key LIKE '.'", Prefix="k/002"),
    "lister_no_prefix": search_as("lister", "key LIKE '.'"),
    "reader_sees_metadata": search_as("reader", "x-amz-meta-color = red") == red,
    "nobody": search_as("nobody", "key LIKE '.'"),
    # A search of versions is ListObjectVersions' right (s3:ListBucketVersions), which the
    # reader (s3:ListBucket) does not have.
    "reader_versions": search_as("reader", "key LIKE '.'", versions=True),
}
result["auth"] = auth
progress("done")
print("RESULT " + json.dumps(result))
