"""Issue 64, item 1: full-object multipart checksums through boto3, as ceph/s3-tests'
`test_multipart_use_cksum_helper_*` check them: three parts of 5 MiB of 'A', 'B' and 'C';
each part's checksum on UploadPart and on GET with PartNumber; the object's (FULL_OBJECT:
the CRC of the whole data, combined from the parts'; COMPOSITE: the checksum of the parts'
checksums, `-3`) on Complete, on HEAD with checksum mode, in GetObjectAttributes, with its
ChecksumType everywhere. SHA1 and SHA256 allow COMPOSITE only, CRC64NVME FULL_OBJECT only.
Also CopyObject: a checksum algorithm it names is computed over the bytes copied.

The values are s3-tests'; the CRC32 ones are also computed here (zlib), so the combination
is checked against the data itself, not only against a table.

Usage: python full_object_checksums.py ENDPOINT ACCESS_KEY SECRET_KEY
"""
import base64
import hashlib
import sys
import zlib

from s3check import check, client as make_client

endpoint, ak, sk = sys.argv[1:4]
s3 = make_client(endpoint, ak, sk)
B = "full-object-cksum"
s3.create_bucket(Bucket=B)
SIZE = 5 * 1024 * 1024
bodies = [c * SIZE for c in (b"A", b"B", b"C")]

# (algorithm, type, the three parts' checksums, the object's): ceph/s3-tests' values.
CASES = [
    ("CRC32", "FULL_OBJECT", ["JRTCyQ==", "QoZTGg==", "YAgjqw=="], "WgDhBQ=="),
    ("CRC32C", "FULL_OBJECT", ["MDaLrw==", "TH4EZg==", "Z7mBIQ=="], "xU+Krw=="),
    ("CRC64NVME", "FULL_OBJECT", ["L/E4WYn8v98=", "xW1l19VobYM=", "cK5MnNaWrW4="], "i+6LR0y3eFo="),
    ("SHA1", "COMPOSITE", ["iIaTCGbm+vdVjNqIMF2S0T7ibMk=", "LS/TJ32bAVKEwRu+sE3X7awh/lk=",
                           "6DDwovUaHwrKNXDMzOGbuvj9kxI="], "sizjvY4eud3MrcHdZM3cQ/ol39o=-3"),
    ("SHA256", "COMPOSITE", ["275VF5loJr1YYawit0XSHREhkFXYkkPKGuoK0x9VKxI=",
                             "mrHwOfjTL5Zwfj74F05HOQGLdUb7E5szdCbxgUSq6NM=",
                             "Vw7oB/nKQ5xWb3hNgbyfkvDiivl+U+/Dft48nfJfDow="],
     "uWBwpe1dxI4Vw8Gf0X9ynOdw/SS6VBzfWm9giiv1sf4=-3"),
]


def crc32_b64(data):
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


# The table's CRC32 values are the data's own.
check([crc32_b64(b) for b in bodies] == CASES[0][2], "the parts' CRC32s are zlib's")
check(crc32_b64(b"".join(bodies)) == CASES[0][3],
      "the FULL_OBJECT CRC32 is zlib's CRC32 of the whole object")

for alg, kind, parts, whole in CASES:
    key = f"obj-{alg.lower()}"
    arg = "Checksum" + alg
    up = s3.create_multipart_upload(Bucket=B, Key=key, ChecksumAlgorithm=alg, ChecksumType=kind)
    check(up["ChecksumAlgorithm"] == alg and up.get("ChecksumType") == kind,
          f"{alg}: CreateMultipartUpload answers the algorithm and {kind}")
    uid = up["UploadId"]
    done = []
    for n, (body, want) in enumerate(zip(bodies, parts), start=1):
        r = s3.upload_part(Bucket=B, Key=key, UploadId=uid, PartNumber=n, Body=body,
                           ChecksumAlgorithm=alg, **{arg: want})
        check(r[arg] == want, f"{alg}: part {n}'s checksum on UploadPart")
        done.append({"ETag": r["ETag"], arg: r[arg], "PartNumber": n})
    r = s3.complete_multipart_upload(Bucket=B, Key=key, UploadId=uid,
                                     MultipartUpload={"Parts": done}, **{arg: whole})
    check(r.get("ChecksumType") == kind and r[arg] == whole,
          f"{alg}: Complete answers {whole} and {kind}")
    h = s3.head_object(Bucket=B, Key=key)
    check(arg not in h, f"{alg}: HEAD without checksum mode has no checksum")
    h = s3.head_object(Bucket=B, Key=key, ChecksumMode="ENABLED")
    check(h.get("ChecksumType") == kind and h[arg] == whole,
          f"{alg}: HEAD with checksum mode answers {whole} and {kind}")
    a = s3.get_object_attributes(Bucket=B, Key=key, ObjectAttributes=["Checksum"])["Checksum"]
    check(a.get("ChecksumType") == kind and a[arg] == whole,
          f"{alg}: GetObjectAttributes answers {whole} and {kind}")
    for n, want in enumerate(parts, start=1):
        g = s3.get_object(Bucket=B, Key=key, PartNumber=n, ChecksumMode="ENABLED")
        body = g["Body"].read()
        check(body == bodies[n - 1] and g.get("ChecksumType") == kind and g[arg] == want,
              f"{alg}: GET of part {n} answers its data, its checksum and {kind}")
        h = s3.head_object(Bucket=B, Key=key, PartNumber=n, ChecksumMode="ENABLED")
        check(h.get("ChecksumType") == kind and h[arg] == want,
              f"{alg}: HEAD of part {n} answers its checksum and {kind}")
    # A range is no part: no checksum of it is claimed.
    g = s3.get_object(Bucket=B, Key=key, Range="bytes=0-9", ChecksumMode="ENABLED")
    check(arg not in g and "ChecksumType" not in g, f"{alg}: a ranged GET claims no checksum")

# A copy that replaces the metadata is one part: a part read of it claims no composite
# checksum that describes parts it no longer has.
s3.copy_object(Bucket=B, Key="replaced", CopySource={"Bucket": B, "Key": "obj-sha256"},
               MetadataDirective="REPLACE", Metadata={"a": "b"})
g = s3.get_object(Bucket=B, Key="replaced", PartNumber=1, ChecksumMode="ENABLED")
g["Body"].read()
check("ChecksumSHA256" not in g or not g["ChecksumSHA256"].endswith("-3"),
      f"a part read of a replaced copy claims no composite checksum ({g.get('ChecksumSHA256')})")

def with_headers(operation, headers, call):
    """The error code of `call` ("OK" when it succeeds) with `headers` added before signing
    (boto3 has no parameter for them on copies)."""
    def add(request, **_):
        for k, v in headers.items():
            request.headers[k] = v
    s3.meta.events.register(f"before-sign.s3.{operation}", add)
    try:
        call()
        return "OK"
    except Exception as e:  # botocore.exceptions.ClientError
        return e.response["Error"]["Code"]
    finally:
        s3.meta.events.unregister(f"before-sign.s3.{operation}", add)


# CopyObject with a checksum algorithm computes the copy's checksum with it over the bytes
# copied; without one the copy keeps the source's, and says so.
whole = b"".join(bodies)
r = s3.copy_object(Bucket=B, Key="copied-sha256", CopySource={"Bucket": B, "Key": "obj-crc32"},
                   ChecksumAlgorithm="SHA256")["CopyObjectResult"]
want = base64.b64encode(hashlib.sha256(whole).digest()).decode()
check(r.get("ChecksumSHA256") == want and r.get("ChecksumType") == "FULL_OBJECT"
      and "ChecksumCRC32" not in r, f"a copy with SHA256 gets the SHA-256 of its bytes ({r})")
h = s3.head_object(Bucket=B, Key="copied-sha256", ChecksumMode="ENABLED")
check(h.get("ChecksumSHA256") == want and "ChecksumCRC32" not in h,
      "and HEAD answers it, and no CRC32 of the source")
g = s3.get_object(Bucket=B, Key="copied-sha256", PartNumber=1, ChecksumMode="ENABLED")
g["Body"].read()
check("ChecksumSHA256" not in g and "ChecksumCRC32" not in g,
      "a part of that copy claims no checksum of another algorithm")
r = s3.copy_object(Bucket=B, Key="copied", CopySource={"Bucket": B, "Key": "obj-crc32"})["CopyObjectResult"]
check(r.get("ChecksumCRC32") == "WgDhBQ==" and r.get("ChecksumType") == "FULL_OBJECT",
      f"a copy without an algorithm keeps the source's checksum ({r})")
# A value given with the copy is checked against the bytes copied: the wrong one is
# BadDigest and no copy is made; an unknown algorithm, or a value of another, is refused.
copy = dict(Bucket=B, Key="checked", CopySource={"Bucket": B, "Key": "obj-crc32"})
got = with_headers("CopyObject", {"x-amz-checksum-sha256": want.replace(want[0], "A" if want[0] != "A" else "B", 1)},
                   lambda: s3.copy_object(**copy))
check(got == "BadDigest", f"a copy whose bytes are not the value given is refused ({got})")
check(with_headers("HeadObject", {}, lambda: s3.head_object(Bucket=B, Key="checked")) == "404",
      "and nothing is stored")
check(with_headers("CopyObject", {"x-amz-checksum-sha256": want}, lambda: s3.copy_object(**copy)) == "OK"
      and s3.head_object(Bucket=B, Key="checked", ChecksumMode="ENABLED").get("ChecksumSHA256") == want,
      "a copy whose bytes are the value given is stored with it")
for hs in [{"x-amz-checksum-algorithm": "MD7"}, {"x-amz-checksum-algorithm": "CRC32\u00e9"},
           {"x-amz-checksum-algorithm": "CRC32", "x-amz-checksum-sha256": want}]:
    got = with_headers("CopyObject", hs, lambda: s3.copy_object(**copy))
    check(got == "InvalidRequest", f"a copy with {hs} is refused ({got})")

# UploadPartCopy into an upload with an algorithm: the copied part gets its checksum,
# computed over the bytes copied, and the object's FULL_OBJECT CRC covers it.
up = s3.create_multipart_upload(Bucket=B, Key="part-copied", ChecksumAlgorithm="CRC32",
                                ChecksumType="FULL_OBJECT")
uid = up["UploadId"]
c = s3.upload_part_copy(Bucket=B, Key="part-copied", UploadId=uid, PartNumber=1,
                        CopySource={"Bucket": B, "Key": "obj-crc32"},
                        CopySourceRange=f"bytes=0-{SIZE - 1}")["CopyPartResult"]
check(c.get("ChecksumCRC32") == crc32_b64(bodies[0]),
      f"a copied part's CRC32 is its bytes' ({c.get('ChecksumCRC32')})")
p2 = s3.upload_part(Bucket=B, Key="part-copied", UploadId=uid, PartNumber=2, Body=bodies[1],
                    ChecksumAlgorithm="CRC32")
r = s3.complete_multipart_upload(Bucket=B, Key="part-copied", UploadId=uid, MultipartUpload={
    "Parts": [{"ETag": c["ETag"], "ChecksumCRC32": c["ChecksumCRC32"], "PartNumber": 1},
              {"ETag": p2["ETag"], "ChecksumCRC32": p2["ChecksumCRC32"], "PartNumber": 2}]})
check(r.get("ChecksumCRC32") == crc32_b64(bodies[0] + bodies[1]) and r.get("ChecksumType") == "FULL_OBJECT",
      f"and the object's CRC32 covers it ({r.get('ChecksumCRC32')})")
up = s3.create_multipart_upload(Bucket=B, Key="part-copied", ChecksumAlgorithm="CRC32")
copy_part = dict(Bucket=B, Key="part-copied", UploadId=up["UploadId"], PartNumber=1,
                 CopySource={"Bucket": B, "Key": "obj-crc32"}, CopySourceRange=f"bytes=0-{SIZE - 1}")
got = with_headers("UploadPartCopy", {"x-amz-checksum-algorithm": "SHA256"},
                   lambda: s3.upload_part_copy(**copy_part))
check(got == "InvalidRequest", f"a copied part naming another algorithm is refused ({got})")
got = with_headers("UploadPartCopy", {"x-amz-checksum-crc32": "AAAAAA=="},
                   lambda: s3.upload_part_copy(**copy_part))
check(got == "BadDigest", f"a copied part whose bytes are not the value given is refused ({got})")
got = with_headers("UploadPartCopy", {"x-amz-checksum-crc32": crc32_b64(bodies[0])},
                   lambda: s3.upload_part_copy(**copy_part))
check(got == "OK", f"and taken when they are ({got})")
parts = s3.list_parts(Bucket=B, Key="part-copied", UploadId=up["UploadId"]).get("Parts", [])
check([p.get("ChecksumCRC32") for p in parts] == [crc32_b64(bodies[0])],
      "only the part that matched is stored")
s3.abort_multipart_upload(Bucket=B, Key="part-copied", UploadId=up["UploadId"])

# The types an algorithm does not allow are refused, as AWS refuses them.
for alg, kind in [("SHA1", "FULL_OBJECT"), ("SHA256", "FULL_OBJECT"), ("CRC64NVME", "COMPOSITE")]:
    try:
        s3.create_multipart_upload(Bucket=B, Key="refused", ChecksumAlgorithm=alg, ChecksumType=kind)
        got = "accepted"
    except Exception as e:  # botocore.exceptions.ClientError
        got = (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"])
    check(got == ("InvalidRequest", 400), f"{alg} with {kind} is refused 400 InvalidRequest: {got}")

# Without a type the CRC32 family is COMPOSITE and CRC64NVME FULL_OBJECT, as on AWS.
for alg, kind in [("CRC32", "COMPOSITE"), ("CRC32C", "COMPOSITE"), ("CRC64NVME", "FULL_OBJECT")]:
    up = s3.create_multipart_upload(Bucket=B, Key="default", ChecksumAlgorithm=alg)
    check(up.get("ChecksumType") == kind, f"{alg} without a type is {kind}")
    s3.abort_multipart_upload(Bucket=B, Key="default", UploadId=up["UploadId"])

print("full_object_checksums: all checks passed")
