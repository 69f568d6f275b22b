"""Objects that another v7files writer put into a content-addressed bucket, written here with
PyMongo from the StorageFormat description (not through grids3), read through S3 with boto3:
whole and by ranges, byte for byte, with their ETags. The forms grids3 does not write itself
but must read:
- an object whose bytes are `in` without a `length` (and without `chunkSize`);
- `sha` as a 40-digit hex string, on the object and inside a `cat`;
- an inline `cat` piece given as the bare bytes;
- an object `length` shorter than its content (the format says the length truncates);
- no `metadata.etag` on any of them (an opaque ETag derived from the files document: no read,
  no write; issue 59);
and GridFS files PyMongo wrote into a GridFS bucket, whose first listing shows their ETags.

Usage: python seed_forms.py ENDPOINT ACCESS_KEY SECRET_KEY MONGODB_URI DATABASE
"""
import datetime
import hashlib
import os
import re
import sys

import gridfs
import pymongo
from bson.binary import Binary
from s3check import check, client as make_client

endpoint, ak, sk, uri, dbname = sys.argv[1:6]
s3 = make_client(endpoint, ak, sk)
db = pymongo.MongoClient(uri)[dbname]


def content_bucket(name):
    c = make_client(endpoint, ak, sk)

    def add(request, **_):
        request.headers["x-grids3-storage-mode"] = "content"

    c.meta.events.register("before-sign.s3.CreateBucket", add)
    c.create_bucket(Bucket=name)


def md5(b):
    return '"' + hashlib.md5(b).hexdigest() + '"'


def sha1(b):
    return hashlib.sha1(b).digest()


B = "seeded"
content_bucket(B)
files, content = db[f"{B}.files"], db[f"{B}._content"]
now = datetime.datetime.now(datetime.timezone.utc)
a, b, c = os.urandom(3000), os.urandom(5000), os.urandom(700)
for piece in (a, b):
    content.insert_one({"_id": Binary(sha1(piece)), "in": Binary(piece)})
objects = {}


def seed(key, data, **fields):
    files.insert_one({"filename": key, "uploadDate": now, **fields})
    objects[key] = data


seed("inline-without-length", c, **{"in": Binary(c), "contentType": "application/octet-stream"})
seed("hex-sha", a, sha=sha1(a).hex(), length=len(a))
whole = a + c + b
content.insert_one({
    "_id": Binary(sha1(whole)), "store": "cat", "length": len(whole),
    "base": [{"sha": Binary(sha1(a)), "length": len(a)}, Binary(c), {"sha": sha1(b).hex(), "length": len(b)}],
})
seed("cat-of-forms", whole, sha=Binary(sha1(whole)), length=len(whole))
seed("truncating-length", b[:1234], sha=Binary(sha1(b)), length=1234)

OPAQUE = r'"[0-9a-f]{32}-[0-9]+"'
etags = {}
for key, data in objects.items():
    got = s3.get_object(Bucket=B, Key=key)
    check(got["Body"].read() == data, f"{key}: GET reads it byte for byte")
    etags[key] = got["ETag"]
    check(re.fullmatch(OPAQUE, got["ETag"]) is not None, f"{key}: an opaque ETag, not claimed to be an MD5: {got['ETag']}")
    check(s3.head_object(Bucket=B, Key=key)["ETag"] == got["ETag"], f"{key}: HEAD shows the same ETag")
    n = len(data)
    for first, last in [(0, 0), (1, n // 2), (n // 3, n - 1), (n - 10, n - 1)]:
        part = s3.get_object(Bucket=B, Key=key, Range=f"bytes={first}-{last}")["Body"].read()
        check(part == data[first:last + 1], f"{key}: range {first}-{last}")
    check("metadata" not in files.find_one({"filename": key}), f"{key}: nothing written back")
listed = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket=B)["Contents"]}
check(listed == etags, "the listing shows every seeded object with the ETag GET showed")

# GridFS files PyMongo writes (no MD5: drivers stopped writing it) into a GridFS bucket: the
# first listing shows their ETags, not "": an empty file's is the MD5 of no bytes, as S3's.
s3.create_bucket(Bucket="pymongo-written")
gridfs.GridFSBucket(db, "pymongo-written").upload_from_stream("empty", b"")
listed = s3.list_objects_v2(Bucket="pymongo-written")["Contents"]
check([(o["Key"], o["ETag"]) for o in listed] == [("empty", md5(b""))], "a first listing of an empty PyMongo file shows the MD5 of no bytes")
# A non-empty one, small or large, gets an opaque ETag of the multipart form on its first
# listing, never "", and the same one from HEAD and GET, without a read or a write.
data = os.urandom(100_000)
gridfs.GridFSBucket(db, "pymongo-written").upload_from_stream("g", data)
listed = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket="pymongo-written")["Contents"]}
check(re.fullmatch(r'"[0-9a-f]{32}-1"', listed["g"]) is not None, f"a small PyMongo file's first listing shows an opaque ETag: {listed['g']}")
check(s3.head_object(Bucket="pymongo-written", Key="g")["ETag"] == listed["g"], "HEAD shows the listed ETag of the small file")
big = os.urandom(3 * 1024 * 1024)
gridfs.GridFSBucket(db, "pymongo-written").upload_from_stream("big", big)
listed = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket="pymongo-written")["Contents"]}
chunks = -(-len(big) // (255 * 1024))
check(re.fullmatch(r'"[0-9a-f]{32}-%d"' % chunks, listed["big"]) is not None, f"a large PyMongo file's first listing shows an opaque ETag: {listed['big']}")
check(s3.head_object(Bucket="pymongo-written", Key="big")["ETag"] == listed["big"], "HEAD shows the listed ETag")
got = s3.get_object(Bucket="pymongo-written", Key="big")
check(got["ETag"] == listed["big"] and got["Body"].read() == big, "GET shows it too, with the bytes")
again = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket="pymongo-written")["Contents"]}
check(again["big"] == listed["big"], "a second listing derives the same ETag")
check("metadata" not in db["pymongo-written.files"].find_one({"filename": "big"}),
      "derived, not written back: the file PyMongo wrote is untouched")
print("seed: all checks passed")
