"""Content-addressed buckets (x-grids3-storage-mode: content) through S3 with boto3, and what
other MongoDB applications see: an independent v7files-format reader (v7files_reader.py) and
PyMongo's GridFSBucket reading the large contents.

Usage: python content.py ENDPOINT ACCESS_KEY SECRET_KEY MONGODB_URI DATABASE INLINE_MAX
The gateway runs with a short content grace period and janitor interval (see tests/it/content.rs).
"""
import gzip
import hashlib
import os
import sys
import time

import gridfs
import pymongo
from s3check import check, client as make_client, code
from v7files_reader import V7Reader

endpoint, ak, sk, uri, dbname, inline_max = sys.argv[1:7]
inline_max = int(inline_max)
s3 = make_client(endpoint, ak, sk)
db = pymongo.MongoClient(uri)[dbname]


def with_header(name, value):
    """A client whose CreateBucket sends one more header."""
    c = make_client(endpoint, ak, sk)

    def add(request, **_):
        request.headers[name] = value

    c.meta.events.register("before-sign.s3.CreateBucket", add)
    return c


def md5(b):
    return '"' + hashlib.md5(b).hexdigest() + '"'


def get(key, **kw):
    return s3.get_object(Bucket=B, Key=key, **kw)["Body"].read()


B = "cas"
check(code(lambda: with_header("x-grids3-storage-mode", "nope").create_bucket(Bucket="cas-bad")) == "InvalidArgument",
      "an unknown storage mode is InvalidArgument")
with_header("x-grids3-storage-mode", "content").create_bucket(Bucket=B)
meta = db["__metastore"].find_one({"_id": B})
check(meta.get("storage") == "content", "the bucket's mode is in the metastore")
check(code(lambda: with_header("x-grids3-storage-mode", "gridfs").create_bucket(Bucket=B)) == "BucketAlreadyOwnedByYou",
      "re-creating the bucket in another mode is refused, never answered as done")
check(code(lambda: with_header("x-grids3-storage-mode", "content").create_bucket(Bucket=B)) == "OK",
      "re-creating it in its own mode is the us-east-1 no-op")
check(code(lambda: s3.create_bucket(Bucket=B)) == "OK", "and so is a re-create without the header")
s3.create_bucket(Bucket="plain")
check("storage" not in db["__metastore"].find_one({"_id": "plain"}), "gridfs is the default mode")
reader = V7Reader(db, B)
files, content, refs = db[f"{B}.files"], db[f"{B}._content"], db[f"{B}._refs"]
blob_files, blob_chunks = db[f"{B}._blobs.files"], db[f"{B}._blobs.chunks"]

# --- Inline: a tiny object lives in its own document (no chunk, no content, no reference). ---
tiny = b"tiny object " * 5
r = s3.put_object(Bucket=B, Key="tiny", Body=tiny, ContentType="application/octet-stream")
check(r["ETag"] == md5(tiny), "ETag is the MD5 of the bytes")
d = files.find_one({"filename": "tiny"})
check(bytes(d["in"]) == tiny and d["length"] == len(tiny), "the object document holds `in`")
check(d.get("contentType") == "application/octet-stream", "and its contentType")
check(refs.count_documents({"_id": d["_id"]}) == 0, "an inline object references nothing")
check(db[f"{B}.chunks"].count_documents({}) == 0, "no GridFS chunks for the objects")
check(get("tiny") == tiny, "GET of an inline object")
check(get("tiny", Range="bytes=5-9") == tiny[5:10], "Range of an inline object")

# --- A content document (`in`) for contents up to one chunk. ---
medium = os.urandom(100 * 1024)
sha_m = hashlib.sha1(medium).digest()
s3.put_object(Bucket=B, Key="medium", Body=medium)
d = files.find_one({"filename": "medium"})
check(bytes(d["sha"]) == sha_m and "in" not in d, "the object points at its content by SHA-1")
c = content.find_one({"_id": sha_m})
check(c is not None and bytes(c["in"]) == medium, "a content document with `in`")
check(refs.find_one({"_id": d["_id"]})["refs"] == [sha_m], "the object's reference")
check(get("medium") == medium, "GET of a content document")

# --- gzip for compressible types; SHA-1, length, ETag and checksums describe the plain bytes. ---
text = ("".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(3000))).encode()[:200 * 1024]
sha_t = hashlib.sha1(text).digest()
r = s3.put_object(Bucket=B, Key="doc.txt", Body=text, ContentType="text/plain", ChecksumAlgorithm="SHA256")
check(r["ETag"] == md5(text), "ETag of a gzipped object is the MD5 of its plain bytes")
c = content.find_one({"_id": sha_t})
check(c.get("store") == "gz" and c["length"] == len(text), "stored gzipped, with the plain length")
check(gzip.decompress(bytes(c["zin"])) == text, "zin is gzip of the bytes")
check(len(bytes(c["zin"])) < len(text) // 4, f"gzip saved space ({len(bytes(c['zin']))} of {len(text)} bytes)")
check(get("doc.txt") == text, "GET decompresses")
check(get("doc.txt", Range="bytes=100000-100099") == text[100000:100100], "a Range inside gzipped content")
check(get("doc.txt", Range="bytes=-10") == text[-10:], "a suffix Range")
h = s3.head_object(Bucket=B, Key="doc.txt", ChecksumMode="ENABLED")
check(h["ContentLength"] == len(text) and h["ETag"] == md5(text), "HEAD shows the plain size and ETag")
import base64
check(h.get("ChecksumSHA256") == base64.b64encode(hashlib.sha256(text).digest()).decode(),
      "the checksum describes the plain bytes")
incompressible = os.urandom(50 * 1024)
s3.put_object(Bucket=B, Key="random.txt", Body=incompressible, ContentType="text/plain")
c = content.find_one({"_id": hashlib.sha1(incompressible).digest()})
check("in" in c and "store" not in c, "content gzip would not shrink is stored plain")

# --- Large contents: a GridFS file of B._blobs named by the SHA-1. ---
large = os.urandom(3 * 1024 * 1024 + 17)
sha_l = hashlib.sha1(large).digest()
s3.put_object(Bucket=B, Key="large", Body=large)
blob = blob_files.find_one({"_id": sha_l})
check(blob is not None and blob["length"] == len(large), "a blob whose _id is the SHA-1")
bucket = gridfs.GridFSBucket(db, bucket_name=f"{B}._blobs")
check(bucket.open_download_stream(sha_l).read() == large, "PyMongo's GridFSBucket reads the blob")
check(get("large") == large, "GET of a large content")
check(get("large", Range="bytes=1048570-2097160") == large[1048570:2097161], "a Range across chunks")
chunks_before = blob_chunks.count_documents({})

# --- De-duplication: the same bytes again store nothing new. ---
for i in range(5):
    r = s3.put_object(Bucket=B, Key=f"large-copy-{i}", Body=large)
    check(r["ETag"] == md5(large), f"PUT {i} of the same bytes")
check(blob_files.count_documents({}) == 1, "one blob for six objects")
check(blob_chunks.count_documents({}) == chunks_before, "no chunk added by the copies")
check(refs.count_documents({"refs": sha_l}) == 6, "six references")
s3.put_object(Bucket=B, Key="medium-2", Body=medium)
check(content.count_documents({"_id": sha_m}) == 1, "a content document once for two objects")
r = s3.copy_object(Bucket=B, Key="large-copied", CopySource={"Bucket": B, "Key": "large"})
check(r["CopyObjectResult"]["ETag"] == md5(large), "CopyObject")
check(blob_chunks.count_documents({}) == chunks_before, "CopyObject stores no new bytes")
check(get("large-copied") == large, "the copy reads back")
copied = files.find_one({"filename": "large-copied"})
check(bytes(copied["sha"]) == sha_l and refs.find_one({"_id": copied["_id"]})["refs"] == [sha_l],
      "the copy points at the same content, with its own reference")
s3.copy_object(Bucket=B, Key="tiny-copied", CopySource={"Bucket": B, "Key": "tiny"})
check(bytes(files.find_one({"filename": "tiny-copied"})["in"]) == tiny, "an inline object's copy is inline")
check(get("tiny-copied") == tiny, "and reads back")
s3.copy_object(Bucket="plain", Key="from-cas", CopySource={"Bucket": B, "Key": "doc.txt"})
check(s3.get_object(Bucket="plain", Key="from-cas")["Body"].read() == text,
      "a copy into a GridFS bucket carries the bytes")
check(gridfs.GridFSBucket(db, bucket_name="plain").open_download_stream_by_name("from-cas").read() == text,
      "and is a standard GridFS file there")

# --- Everything S3 shows works as in a GridFS bucket. ---
keys = [o["Key"] for o in s3.list_objects_v2(Bucket=B)["Contents"]]
check(keys == sorted(keys) and "large-copy-3" in keys and "tiny" in keys, "listing")
sizes = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket=B)["Contents"]}
check(sizes["large"] == len(large) and sizes["doc.txt"] == len(text), "listed sizes are plain sizes")
check(code(lambda: s3.put_object(Bucket=B, Key="tiny", Body=b"x", IfNoneMatch="*")) == "PreconditionFailed",
      "conditional writes")
s3.put_object_tagging(Bucket=B, Key="medium", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
check(s3.get_object_tagging(Bucket=B, Key="medium")["TagSet"] == [{"Key": "k", "Value": "v"}], "tagging")

# --- The independent reader reads every object as S3 serves it. ---
for k in keys:
    check(reader.read(k) == get(k), f"the v7files reader reads {k}")

# --- A `cat` content (another v7files writer's concatenation) is served by streaming its bases:
# a content document, inline bytes, and a slice of a blob. ---
from bson import Binary
whole = medium + b"-middle-" + large[10:1010]
sha_c = hashlib.sha1(whole).digest()
content.insert_one({"_id": sha_c, "store": "cat", "base": [
    {"sha": sha_m, "length": len(medium)},
    {"in": Binary(b"-middle-")},
    {"sha": sha_l, "off": 10, "length": 1000},
]})
cat_id = files.insert_one({"filename": "cat", "length": len(whole), "chunkSize": 261120,
                           "uploadDate": __import__("datetime").datetime.now(__import__("datetime").timezone.utc),
                           "metadata": {"etag": md5(whole)}, "sha": sha_c}).inserted_id
refs.insert_one({"_id": cat_id, "refs": [sha_c], "refHistory": [sha_c]})
check(get("cat") == whole, "GET of a cat content")
lo, hi = len(medium) - 5, len(medium) + 20
check(get("cat", Range=f"bytes={lo}-{hi}") == whole[lo:hi + 1], "a Range across a cat's bases")
check(get("cat", Range="bytes=-300") == whole[-300:], "a Range inside a cat's blob slice")
check(reader.read("cat") == whole, "the v7files reader reads the cat content")
s3.delete_object(Bucket=B, Key="cat")

# --- Multipart: every part is a content; completion makes a `cat` content of the parts'
# contents (no byte moved, whatever the part sizes); a part's replacement and an aborted
# upload's parts are reclaimed. ---
MIB = 1024 * 1024
p1, p2_old, p2, p3 = os.urandom(5 * MIB + 1), os.urandom(5 * MIB), os.urandom(5 * MIB), b"tail!"
whole_mp = p1 + p2 + p3
sha_p1, sha_p2_old, sha_p2, sha_p3 = (hashlib.sha1(x).digest() for x in (p1, p2_old, p2, p3))
sha_mp = hashlib.sha1(whole_mp).digest()


def multipart(key, parts, replace_first=None):
    up = s3.create_multipart_upload(Bucket=B, Key=key)["UploadId"]
    done = []
    for i, body in enumerate(parts, start=1):
        if replace_first and i in replace_first:
            s3.upload_part(Bucket=B, Key=key, UploadId=up, PartNumber=i, Body=replace_first[i])
        r = s3.upload_part(Bucket=B, Key=key, UploadId=up, PartNumber=i, Body=body)
        done.append({"PartNumber": i, "ETag": r["ETag"]})
    return s3.complete_multipart_upload(Bucket=B, Key=key, UploadId=up, MultipartUpload={"Parts": done})


blobs_before_mp = {bytes(d["_id"]) for d in blob_files.find({}, {"_id": 1})}
r = multipart("mp", [p1, p2, p3], replace_first={2: p2_old})
want_etag = '"' + hashlib.md5(b"".join(hashlib.md5(x).digest() for x in (p1, p2, p3))).hexdigest() + '-3"'
check(r["ETag"] == want_etag, "CompleteMultipartUpload answers the multipart ETag")
d = files.find_one({"filename": "mp"})
check(bytes(d["sha"]) == sha_mp and d["length"] == len(whole_mp), "the object points at the whole SHA-1")
c = content.find_one({"_id": sha_mp})
check(c is not None and c.get("store") == "cat" and c["length"] == len(whole_mp),
      "a `cat` content of the whole")
check([(bytes(b["sha"]), b["length"]) for b in c["base"]] == [(sha_p1, len(p1)), (sha_p2, len(p2)), (sha_p3, len(p3))],
      "whose base lists the parts' contents in order")
check(refs.find_one({"_id": sha_mp})["refBase"] == [sha_p1, sha_p2, sha_p3], "its refBase names them")
for sha, body in ((sha_p1, p1), (sha_p2, p2), (sha_p3, p3)):
    check(bucket.open_download_stream(sha).read() == body, "PyMongo's GridFSBucket reads each part's blob")
# What completion stored, by name rather than by a count of all chunks: the janitor reclaims
# the replaced part (p2_old) and earlier releases a second after they are due, meanwhile.
part_chunks = sum(-(-len(x) // blob_files.find_one({"_id": hashlib.sha1(x).digest()})["chunkSize"])
                  for x in (p1, p2, p3))
new_mp_blobs = {bytes(d["_id"]) for d in blob_files.find({}, {"_id": 1})} - blobs_before_mp
check(new_mp_blobs <= {sha_p1, sha_p2_old, sha_p2, sha_p3}
      and blob_chunks.count_documents({"files_id": {"$in": [sha_p1, sha_p2, sha_p3]}}) == part_chunks
      and blob_chunks.count_documents({"files_id": sha_mp}) == 0,
      "the parts' chunks are all that was stored: completion wrote none")
check(get("mp") == whole_mp, "GET of a multipart object")
lo = len(p1) - 3
check(get("mp", Range=f"bytes={lo}-{lo + 10}") == whole_mp[lo:lo + 11], "a Range across a part boundary")
check(get("mp", Range="bytes=-7") == whole_mp[-7:], "a suffix Range into the last part")
check(s3.get_object(Bucket=B, Key="mp", PartNumber=2)["Body"].read() == p2, "GET ?partNumber=2")
check(reader.read("mp") == whole_mp, "the v7files reader reads the multipart object")
cats_before = sorted(bytes(d["_id"]).hex() for d in content.find({"store": "cat"}, {"_id": 1}))
multipart("mp2", [p1, p2, p3])
cats_after = sorted(bytes(d["_id"]).hex() for d in content.find({"store": "cat"}, {"_id": 1}))
# (The janitor may reclaim an unreferenced cat meanwhile: compare what was added.)
check(set(cats_after) - set(cats_before) == set() and sha_mp.hex() in cats_after,
      f"the same parts again: no second cat content ({cats_before} -> {cats_after}; mp is {sha_mp.hex()})")
check(bytes(files.find_one({"filename": "mp2"})["sha"]) == sha_mp, "the second object shares the content")
s3.put_object(Bucket=B, Key="mp-single", Body=whole_mp)
check(blob_files.count_documents({"_id": sha_mp}) == 0 and bytes(files.find_one({"filename": "mp-single"})["sha"]) == sha_mp,
      "a single PUT of the same bytes is de-duplicated against the cat content")
check(get("mp-single") == whole_mp, "and reads back")
# UploadPartCopy of a whole object and CopyObject of a multipart object share contents.
# (Blobs, not chunk counts: the janitor reclaims earlier releases meanwhile.)
blobs_before_copies = {bytes(d["_id"]) for d in blob_files.find({}, {"_id": 1})}
up = s3.create_multipart_upload(Bucket=B, Key="pc")["UploadId"]
done = []
for i in (1, 2):
    r = s3.upload_part_copy(Bucket=B, Key="pc", UploadId=up, PartNumber=i, CopySource={"Bucket": B, "Key": "mp"})
    check(r["CopyPartResult"]["ETag"] == md5(whole_mp),
          f"UploadPartCopy {i} of a multipart object: the part's ETag is the MD5 of its bytes")
    done.append({"PartNumber": i, "ETag": r["CopyPartResult"]["ETag"]})
r = s3.upload_part(Bucket=B, Key="pc", UploadId=up, PartNumber=3, Body=b"end")
done.append({"PartNumber": 3, "ETag": r["ETag"]})
s3.complete_multipart_upload(Bucket=B, Key="pc", UploadId=up, MultipartUpload={"Parts": done})
check(get("pc") == whole_mp + whole_mp + b"end", "a multipart object made of copied parts reads back")
check(get("pc", Range=f"bytes={len(whole_mp) - 2}-{len(whole_mp) + 2}") == (whole_mp + whole_mp)[len(whole_mp) - 2:len(whole_mp) + 3],
      "a Range across two copies (a cat of cats)")
check(reader.read("pc") == whole_mp + whole_mp + b"end", "the v7files reader reads a cat of cats")
pc = content.find_one({"_id": hashlib.sha1(whole_mp + whole_mp + b"end").digest()})
check([bytes(b["sha"]) for b in pc["base"]][:2] == [sha_mp, sha_mp], "its cat content names the source's content twice")
r = s3.copy_object(Bucket=B, Key="mp-copy", CopySource={"Bucket": B, "Key": "mp"})
check(r["CopyObjectResult"]["ETag"] == md5(whole_mp), "CopyObject of a multipart object: the copy's ETag is its MD5")
check(bytes(files.find_one({"filename": "mp-copy"})["sha"]) == sha_mp, "and it shares the cat content")
new_blobs = [bytes(d["_id"]) for d in blob_files.find({}, {"_id": 1}) if bytes(d["_id"]) not in blobs_before_copies]
sha_end = hashlib.sha1(b"end").digest()
check(new_blobs == [sha_end] and blob_chunks.count_documents({"files_id": sha_end}) == 1,
      f"the copies stored no bytes (one new blob of one chunk: the 3-byte part; new: {len(new_blobs)})")
check(get("mp-copy") == whole_mp, "the copy reads back")
s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "pc"}, {"Key": "mp-copy"}]})
# Checksums of a multipart object in a content bucket describe its bytes, as in GridFS mode.
up = s3.create_multipart_upload(Bucket=B, Key="mpsum", ChecksumAlgorithm="CRC32")["UploadId"]
sums = []
for i, body in enumerate((p1, p3), start=1):
    r = s3.upload_part(Bucket=B, Key="mpsum", UploadId=up, PartNumber=i, Body=body, ChecksumAlgorithm="CRC32")
    sums.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
s3.complete_multipart_upload(Bucket=B, Key="mpsum", UploadId=up, MultipartUpload={"Parts": sums})
import zlib
crcs = b"".join(zlib.crc32(x).to_bytes(4, "big") for x in (p1, p3))
want = base64.b64encode(zlib.crc32(crcs).to_bytes(4, "big")).decode() + "-2"
h = s3.head_object(Bucket=B, Key="mpsum", ChecksumMode="ENABLED")
check(h.get("ChecksumCRC32") == want, f"a multipart object's composite CRC32 ({h.get('ChecksumCRC32')} vs {want})")
attrs = s3.get_object_attributes(Bucket=B, Key="mpsum", ObjectAttributes=["ObjectParts", "ObjectSize"])
check(attrs["ObjectSize"] == len(p1) + len(p3) and attrs["ObjectParts"]["TotalPartsCount"] == 2,
      "GetObjectAttributes lists its parts")
s3.delete_object(Bucket=B, Key="mpsum")
lonely = os.urandom(5 * MIB + 7)
up = s3.create_multipart_upload(Bucket=B, Key="aborted")["UploadId"]
s3.upload_part(Bucket=B, Key="aborted", UploadId=up, PartNumber=1, Body=lonely)
sha_lonely = hashlib.sha1(lonely).digest()
check(blob_files.count_documents({"_id": sha_lonely}) == 1, "an uploaded part's content is stored")
s3.abort_multipart_upload(Bucket=B, Key="aborted", UploadId=up)

# --- Versioning: every version points at its content; deleting a version releases it. ---
VB = "cas-ver"
with_header("x-grids3-storage-mode", "content").create_bucket(Bucket=VB)
vfiles, vcontent, vblobs = db[f"{VB}.files"], db[f"{VB}._content"], db[f"{VB}._blobs.files"]
s3.put_object(Bucket=VB, Key="pre", Body=large)
s3.put_bucket_versioning(Bucket=VB, VersioningConfiguration={"Status": "Enabled"})
check(s3.get_bucket_versioning(Bucket=VB).get("Status") == "Enabled", "versioning enabled on a content bucket")
v1 = s3.put_object(Bucket=VB, Key="k", Body=medium)["VersionId"]
v2 = s3.put_object(Bucket=VB, Key="k", Body=large)["VersionId"]
check(v1 and v2 and v1 != v2, "each PUT is a new version")
check(s3.get_object(Bucket=VB, Key="k", VersionId=v1)["Body"].read() == medium, "GET of the older version")
check(s3.get_object(Bucket=VB, Key="k")["Body"].read() == large, "GET of the current one")
check(s3.get_object(Bucket=VB, Key="pre", VersionId="null")["Body"].read() == large,
      "an object from before versioning is the null version")
check(vblobs.count_documents({"_id": sha_l}) == 1, "two versions of the same bytes share one content")
dm = s3.delete_object(Bucket=VB, Key="k")
check(dm.get("DeleteMarker") is True, "DELETE without a version id leaves a delete marker")
check(code(lambda: s3.get_object(Bucket=VB, Key="k")) == "NoSuchKey", "behind which the key is gone")
check(s3.get_object(Bucket=VB, Key="k", VersionId=v1)["Body"].read() == medium, "but its versions read")
vs = s3.list_object_versions(Bucket=VB, Prefix="k")
check([v["VersionId"] for v in vs["Versions"]] == [v2, v1] and len(vs["DeleteMarkers"]) == 1,
      "ListObjectVersions")
s3.delete_object(Bucket=VB, Key="k", VersionId=v1)
deadline = time.time() + 30
while time.time() < deadline and vcontent.count_documents({"_id": sha_m}):
    time.sleep(0.5)
check(vcontent.count_documents({"_id": sha_m}) == 0, "a version deleted for good releases its content")
check(vblobs.count_documents({"_id": sha_l}) == 1, "a content other versions use stays")
up = s3.create_multipart_upload(Bucket=VB, Key="k")["UploadId"]
r = s3.upload_part(Bucket=VB, Key="k", UploadId=up, PartNumber=1, Body=p1)
r = s3.complete_multipart_upload(Bucket=VB, Key="k", UploadId=up,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r["ETag"]}]})
check(r.get("VersionId") and s3.get_object(Bucket=VB, Key="k")["Body"].read() == p1,
      "a multipart upload is a new version")
vreader = V7Reader(db, VB)
for v in s3.list_object_versions(Bucket=VB)["Versions"]:
    d = vfiles.find_one({"filename": v["Key"], "metadata.s3VersionId": v["VersionId"]}) \
        or vfiles.find_one({"filename": v["Key"], "metadata.s3VersionId": {"$exists": False}})
    check(vreader.read_doc(d) == s3.get_object(Bucket=VB, Key=v["Key"], VersionId=v["VersionId"])["Body"].read(),
          f"the v7files reader reads version {v['VersionId']} of {v['Key']}")
s3.put_bucket_encryption(Bucket=VB, ServerSideEncryptionConfiguration={
    "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
s3.put_object(Bucket=VB, Key="by-default", Body=medium)
check(s3.head_object(Bucket=VB, Key="by-default").get("ServerSideEncryption") == "AES256"
      and "sha" not in vfiles.find_one({"filename": "by-default"}),
      "a content bucket's default encryption seals new objects as GridFS files")
s3.delete_bucket_encryption(Bucket=VB)
LB = "cas-lock"
with_header("x-grids3-storage-mode", "content").create_bucket(Bucket=LB, ObjectLockEnabledForBucket=True)
import datetime as _dt
until = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(days=1)
lv = s3.put_object(Bucket=LB, Key="held", Body=medium, ObjectLockMode="GOVERNANCE",
                   ObjectLockRetainUntilDate=until, ChecksumAlgorithm="SHA256")["VersionId"]
check(code(lambda: s3.delete_object(Bucket=LB, Key="held", VersionId=lv)) == "AccessDenied",
      "Object Lock in a content bucket: a retained version is not deleted")
s3.delete_object(Bucket=LB, Key="held", VersionId=lv, BypassGovernanceRetention=True)

# --- Conversion through the admin API, both ways, on the GridFS bucket "plain". ---
import json

import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def admin(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else b""
    req = AWSRequest(method=method, url=endpoint + path, data=data, headers={"content-type": "application/json"})
    S3SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
    r = requests.request(method, endpoint + path, data=data, headers=dict(req.headers), timeout=60)
    return r.status_code, r.json()


def convert(bucket, to):
    status, info = admin("POST", f"/_grids3/admin/buckets/{bucket}/convert", {"to": to})
    check(status in (200, 202), f"convert {bucket} to {to}: {status} {info}")
    deadline = time.time() + 60
    while info.get("converting") and time.time() < deadline:
        time.sleep(0.3)
        status, info = admin("GET", f"/_grids3/admin/buckets/{bucket}")
    return info


s3.put_object(Bucket="plain", Key="big", Body=large)
s3.put_object(Bucket="plain", Key="small", Body=b"small plain object")
info = convert("plain", "content")
check(info["storage"] == "content" and not info["converting"], f"plain converted to content ({info})")
pfiles = db["plain.files"]
check(pfiles.count_documents({"in": {"$exists": False}, "sha": {"$exists": False}}) == 0,
      "every object of the converted bucket points at a content")
check(bytes(pfiles.find_one({"filename": "big"})["sha"]) == sha_l, "named by the SHA-1 of its bytes")
preader = V7Reader(db, "plain")
for k in ("big", "small", "from-cas"):
    check(preader.read(k) == s3.get_object(Bucket="plain", Key=k)["Body"].read(),
          f"the v7files reader and boto3 read {k} alike after the conversion")
check(admin("POST", "/_grids3/admin/buckets/plain/convert", {"to": "weird"})[0] == 400, "an unknown mode is 400")
info = convert("plain", "gridfs")
check(info["storage"] == "gridfs" and not info["converting"], f"and back to gridfs ({info})")
pbucket = gridfs.GridFSBucket(db, bucket_name="plain")
check(pbucket.open_download_stream_by_name("big").read() == large, "PyMongo's GridFSBucket reads it again")
check(s3.get_object(Bucket="plain", Key="small")["Body"].read() == b"small plain object", "and boto3")

# --- Encryption: encrypted objects are sealed GridFS files inside the content bucket, each under
# its own data key, so equal encrypted objects are never found equal (nor de-duplicated). ---
secret = os.urandom(300_000)
for k in ("enc-1", "enc-2"):
    r = s3.put_object(Bucket=B, Key=k, Body=secret, ServerSideEncryption="AES256")
    check(r["ServerSideEncryption"] == "AES256", f"SSE-S3 PUT of {k} in a content bucket")
enc_ids = []
for k in ("enc-1", "enc-2"):
    d = files.find_one({"filename": k})
    enc_ids.append(d["_id"])
    check("sha" not in d and "in" not in d, f"{k} is a GridFS file, not a content")
    r = s3.get_object(Bucket=B, Key=k)
    check(r["Body"].read() == secret and r["ServerSideEncryption"] == "AES256", f"{k} reads back decrypted")
    check(get(k, Range="bytes=1000-1099") == secret[1000:1100], f"a Range of {k}")
c1, c2 = (bytes(db[f"{B}.chunks"].find_one({"files_id": i, "n": 0})["data"]) for i in enc_ids)
check(c1 != c2 and secret[:64] not in c1, "sealed under different keys: their chunks differ and hide the bytes")
sha_secret = hashlib.sha1(secret).digest()
check(blob_files.count_documents({"_id": sha_secret}) == 0 and content.count_documents({"_id": sha_secret}) == 0,
      "no content is stored for them")
up = s3.create_multipart_upload(Bucket=B, Key="enc-mp", ServerSideEncryption="AES256")["UploadId"]
r = s3.upload_part(Bucket=B, Key="enc-mp", UploadId=up, PartNumber=1, Body=p1)
s3.complete_multipart_upload(Bucket=B, Key="enc-mp", UploadId=up,
                             MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r["ETag"]}]})
check(get("enc-mp") == p1 and "sha" not in files.find_one({"filename": "enc-mp"}),
      "an encrypted multipart upload completes as a sealed GridFS file")
r = s3.copy_object(Bucket=B, Key="enc-copy", CopySource={"Bucket": B, "Key": "medium"}, ServerSideEncryption="AES256")
check(get("enc-copy") == medium and "sha" not in files.find_one({"filename": "enc-copy"}),
      "a copy asked to be encrypted is sealed, not shared")
s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in ("enc-1", "enc-2", "enc-mp", "enc-copy")]})
check(db[f"{B}.chunks"].count_documents({"files_id": {"$in": enc_ids}}) == 0, "deleting them deletes their chunks")

# --- Garbage collection: deleting every object that uses a content reclaims it after the
# grace period (the gateway runs with a short one), and only then. ---
deadline = time.time() + 30
while time.time() < deadline and (blob_files.count_documents({"_id": {"$in": [sha_lonely, sha_p2_old]}})):
    time.sleep(0.5)
check(blob_files.count_documents({"_id": sha_lonely}) == 0, "an aborted upload's part content was reclaimed")
check(blob_files.count_documents({"_id": sha_p2_old}) == 0, "and a replaced part's")
check(get("mp") == whole_mp, "the completed upload's parts stay")
s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in ("mp", "mp2")]})
check(get("mp-single") == whole_mp, "deleting two of three objects of a cat content keeps it")
s3.delete_object(Bucket=B, Key="mp-single")
deadline = time.time() + 30
while time.time() < deadline and (content.count_documents({"_id": sha_mp})
                                  or blob_files.count_documents({"_id": {"$in": [sha_p1, sha_p2, sha_p3]}})):
    time.sleep(0.5)
check(content.count_documents({"_id": sha_mp}) == 0, "the unreferenced cat content was reclaimed")
check(blob_files.count_documents({"_id": {"$in": [sha_p1, sha_p2, sha_p3]}}) == 0, "and then its bases")
s3.delete_object(Bucket=B, Key="large")
s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": f"large-copy-{i}"} for i in range(5)]})
check(blob_files.count_documents({"_id": sha_l}) == 1, "still referenced by large-copied")
check(get("large-copied") == large, "the remaining object reads")
s3.put_object(Bucket=B, Key="large-copied", Body=b"replaced")
check(refs.count_documents({"refs": sha_l, "purge": {"$exists": False}}) == 0, "no live reference left")
s3.delete_object(Bucket=B, Key="medium")
s3.delete_object(Bucket=B, Key="medium-2")
deadline = time.time() + 30
while time.time() < deadline and (blob_files.count_documents({"_id": sha_l}) or content.count_documents({"_id": sha_m})):
    time.sleep(0.5)
check(blob_files.count_documents({"_id": sha_l}) == 0, "the unreferenced blob was reclaimed")
check(blob_chunks.count_documents({"files_id": sha_l}) == 0, "with its chunks")
check(content.count_documents({"_id": sha_m}) == 0, "the unreferenced content document was reclaimed")
check(content.count_documents({"_id": sha_t}) == 1, "a referenced one stays")
check(content.count_documents({"_id": sha_c}) == 0, "the cat content, unreferenced, was reclaimed too")
check(get("doc.txt") == text, "and reads")
deadline = time.time() + 20
while time.time() < deadline and refs.count_documents({"purge": {"$exists": True}}):
    time.sleep(0.5)
check(refs.count_documents({"purge": {"$exists": True}}) == 0, "every due reference was settled")
check(refs.count_documents({}) == files.count_documents({"sha": {"$exists": True}}),
      "one reference per object that points at a content")

print("content: all checks passed")
