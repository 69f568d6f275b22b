"""ACLs and anonymous access against a running grids3, with the clients people use for them:
s3cmd (put --acl-public, setacl --acl-public / --acl-private on objects and buckets, info),
boto3 (canned ACLs, grant headers, AccessControlPolicy documents, an UNSIGNED client) and curl
(unsigned GET, PUT, DELETE and an anonymous form POST).

Usage: python acl.py ENDPOINT ACCESS_KEY SECRET_KEY SECOND_ACCESS_KEY SECOND_SECRET_KEY
"""
import os
import subprocess
import sys

from s3check import check, client as make_client, code, curl, tmp

endpoint, ak, sk, ak2, sk2 = sys.argv[1:6]
host = endpoint.split("://", 1)[1]
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"


root = make_client(endpoint, ak, sk)
other = make_client(endpoint, ak2, sk2)
anon = make_client(endpoint, "x", "x", unsigned=True)

# s3cmd, configured for path-style requests to this endpoint.
cfg = os.path.join(tmp, "s3cfg")
with open(cfg, "w") as f:
    f.write(f"""[default]
access_key = {ak}
secret_key = {sk}
host_base = {host}
host_bucket = {host}
use_https = False
bucket_location = us-east-1
signature_v2 = False
""")
s3cmd = [os.path.join(os.path.dirname(sys.executable), "s3cmd"), "-c", cfg]


def run_s3cmd(*args):
    out = subprocess.run(s3cmd + list(args), capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


# New buckets have ACLs disabled (BucketOwnerEnforced, AWS's default since 2023).
root.create_bucket(Bucket="plain")
check(root.get_bucket_ownership_controls(Bucket="plain")["OwnershipControls"]["Rules"][0]["ObjectOwnership"]
      == "BucketOwnerEnforced", "a new bucket is BucketOwnerEnforced")
check(code(lambda: root.put_object(Bucket="plain", Key="k", Body=b"x", ACL="public-read"))
      == "AccessControlListNotSupported", "so a public ACL is AccessControlListNotSupported")
root.put_object(Bucket="plain", Key="k", Body=b"x", ACL="bucket-owner-full-control")
check(code(lambda: root.create_bucket(Bucket="plainpub", ACL="public-read")) == "InvalidBucketAclWithObjectOwnership",
      "and a public CreateBucket InvalidBucketAclWithObjectOwnership")
root.create_bucket(Bucket="plainpub", ACL="public-read", ObjectOwnership="ObjectWriter")
check(root.get_bucket_ownership_controls(Bucket="plainpub")["OwnershipControls"]["Rules"][0]["ObjectOwnership"]
      == "ObjectWriter", "x-amz-object-ownership on CreateBucket")
check(code(lambda: root.put_bucket_ownership_controls(
    Bucket="plainpub", OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}))
      == "InvalidBucketAclWithObjectOwnership", "ACLs cannot be disabled while the bucket's ACL grants others")

rc, out = run_s3cmd("mb", "s3://cmdacl")
check(rc == 0, f"s3cmd mb ({out.strip()})")
root.put_bucket_ownership_controls(Bucket="cmdacl", OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})
src = os.path.join(tmp, "pic.txt")
with open(src, "wb") as f:
    f.write(b"public picture")
rc, out = run_s3cmd("put", "--acl-public", src, "s3://cmdacl/pic.txt")
check(rc == 0 and "Public URL" in out, f"s3cmd put --acl-public ({out.strip()})")
status, body = curl(f"{endpoint}/cmdacl/pic.txt")
check(status == 200 and body == b"public picture", f"the object s3cmd made public reads unsigned ({status})")
rc, out = run_s3cmd("info", "s3://cmdacl/pic.txt")
check(rc == 0 and "*anon*: READ" in out, f"s3cmd info shows the public grant ({out.strip()})")
rc, out = run_s3cmd("put", src, "s3://cmdacl/private.txt")
check(rc == 0, "s3cmd put (private)")
status, _ = curl(f"{endpoint}/cmdacl/private.txt")
check(status == 403, f"a private object is refused unsigned ({status})")
rc, out = run_s3cmd("setacl", "--acl-public", "s3://cmdacl/private.txt")
check(rc == 0, f"s3cmd setacl --acl-public on an object ({out.strip()})")
status, _ = curl(f"{endpoint}/cmdacl/private.txt")
check(status == 200, f"setacl --acl-public opened it ({status})")
rc, out = run_s3cmd("setacl", "--acl-private", "s3://cmdacl/private.txt")
check(rc == 0, f"s3cmd setacl --acl-private ({out.strip()})")
status, _ = curl(f"{endpoint}/cmdacl/private.txt")
check(status == 403, f"setacl --acl-private closed it again ({status})")
status, _ = curl(f"{endpoint}/cmdacl/?list-type=2")
check(status == 403, "a private bucket cannot be listed unsigned")
rc, out = run_s3cmd("setacl", "--acl-public", "s3://cmdacl")
check(rc == 0, f"s3cmd setacl --acl-public on the bucket ({out.strip()})")
rc, out = run_s3cmd("info", "s3://cmdacl")
check(rc == 0 and "*anon*: READ" in out, f"s3cmd info on the bucket ({out.strip()})")
rc, out = run_s3cmd("cp", "s3://cmdacl/pic.txt", "s3://cmdacl/copy.txt")
check(rc == 0, f"s3cmd cp ({out.strip()})")
rc, out = run_s3cmd("mv", "s3://cmdacl/copy.txt", "s3://cmdacl/moved.txt")
check(rc == 0, f"s3cmd mv ({out.strip()})")

# A public-read bucket: anyone lists it; a missing key is 404 to whoever may list.
listed = anon.list_objects_v2(Bucket="cmdacl")
check([o["Key"] for o in listed["Contents"]] == ["moved.txt", "pic.txt", "private.txt"],
      "an unsigned boto3 client lists a public-read bucket")
check(code(lambda: anon.get_object(Bucket="cmdacl", Key="nothing")) == "NoSuchKey",
      "unsigned GET of a missing key in a listable bucket: NoSuchKey")
check(code(lambda: anon.get_object(Bucket="cmdacl", Key="private.txt")) == "AccessDenied",
      "a private object in a public-read bucket stays private")
check(code(lambda: anon.put_object(Bucket="cmdacl", Key="w", Body=b"x")) == "AccessDenied",
      "public-read does not allow unsigned writes")
check(code(lambda: anon.get_bucket_acl(Bucket="cmdacl")) == "AccessDenied",
      "nor reading the bucket's ACL")

# A public-read-write bucket: unsigned writes, deletes and form uploads.
root.create_bucket(Bucket="dropbox", ACL="public-read-write", ObjectOwnership="ObjectWriter")
grants = root.get_bucket_acl(Bucket="dropbox")["Grants"]
check(sorted(g["Permission"] for g in grants if g["Grantee"].get("URI") == ALL_USERS) == ["READ", "WRITE"],
      "GetBucketAcl shows AllUsers READ and WRITE")
status, _ = curl("-X", "PUT", "--data-binary", "dropped", f"{endpoint}/dropbox/in/one.txt")
check(status == 200, f"unsigned curl PUT into a public-read-write bucket ({status})")
check(root.get_object(Bucket="dropbox", Key="in/one.txt")["Body"].read() == b"dropped", "and it landed")
form = os.path.join(tmp, "form.txt")
with open(form, "wb") as f:
    f.write(b"anonymous form")
status, body = curl("-F", "key=in/${filename}", "-F", "success_action_status=201",
                    "-F", f"file=@{form};filename=form.txt", f"{endpoint}/dropbox")
check(status == 201 and b"<Key>in/form.txt</Key>" in body, f"an anonymous form POST ({status} {body[:200]!r})")
check(root.get_object(Bucket="dropbox", Key="in/form.txt")["Body"].read() == b"anonymous form",
      "the form's object is there")
check(code(lambda: anon.get_object(Bucket="dropbox", Key="in/form.txt")) == "AccessDenied",
      "and private: the bucket's owner owns what others write")
status, _ = curl("-F", "key=x", "-F", f"file=@{form};filename=form.txt", f"{endpoint}/cmdacl")
check(status == 403, f"an anonymous form POST to a bucket without public write ({status})")
status, _ = curl("-X", "DELETE", f"{endpoint}/dropbox/in/one.txt")
check(status == 204, f"unsigned DELETE ({status})")
root.put_bucket_acl(Bucket="dropbox", ACL="private")
status, _ = curl("-X", "PUT", "--data-binary", "x", f"{endpoint}/dropbox/in/two.txt")
check(status == 403, f"after PutBucketAcl private, unsigned PUT is refused ({status})")

# Grants to another key by its canonical id (boto3 grant headers and documents).
other_id = other.list_buckets()["Owner"]["ID"]
root.create_bucket(Bucket="shared", ObjectOwnership="BucketOwnerPreferred")
root.put_object(Bucket="shared", Key="doc", Body=b"for the other key", GrantRead=f'id="{other_id}"')
check(other.get_object(Bucket="shared", Key="doc")["Body"].read() == b"for the other key",
      "x-amz-grant-read by canonical id lets that key read the object")
check(code(lambda: other.list_objects_v2(Bucket="shared")) == "AccessDenied",
      "but not list the bucket")
mpu = root.create_multipart_upload(Bucket="shared", Key="mp", GrantRead=f'id="{other_id}"')
part = root.upload_part(Bucket="shared", Key="mp", UploadId=mpu["UploadId"], PartNumber=1, Body=b"in parts")
root.complete_multipart_upload(Bucket="shared", Key="mp", UploadId=mpu["UploadId"],
                               MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
check(other.get_object(Bucket="shared", Key="mp")["Body"].read() == b"in parts",
      "a grant given at CreateMultipartUpload holds for the completed object")
check(code(lambda: other.get_object(Bucket="shared", Key="missing")) == "AccessDenied",
      "nor learn which keys exist")
check(code(lambda: other.get_object_acl(Bucket="shared", Key="doc")) == "AccessDenied",
      "nor read the object's ACL (READ_ACP was not granted)")
root.put_bucket_acl(Bucket="shared", GrantWrite=f'id="{other_id}"', GrantRead=f'id="{other_id}"')
other.put_object(Bucket="shared", Key="theirs", Body=b"written by the other key")
check([o["Key"] for o in other.list_objects_v2(Bucket="shared")["Contents"]] == ["doc", "mp", "theirs"],
      "bucket READ and WRITE grants let it list and write")
check(code(lambda: other.put_bucket_acl(Bucket="shared", ACL="public-read")) == "AccessDenied",
      "WRITE does not include WRITE_ACP")
# Owners: under BucketOwnerPreferred, the writer owns what it writes unless it hands it over
# with bucket-owner-full-control; listings and ACLs name the real owner.
root_id = root.list_buckets()["Owner"]["ID"]
other.put_object(Bucket="shared", Key="handed", Body=b"h", ACL="bucket-owner-full-control")
owners = {o["Key"]: o["Owner"]["ID"] for o in root.list_objects(Bucket="shared")["Contents"]}
check(owners == {"doc": root_id, "mp": root_id, "theirs": other_id, "handed": root_id},
      f"ListObjects names each object's owner ({owners})")
v2 = {o["Key"]: o["Owner"]["DisplayName"] for o in root.list_objects_v2(Bucket="shared", FetchOwner=True)["Contents"]}
check(v2["theirs"] == ak2 and v2["doc"] == ak, "ListObjectsV2 with FetchOwner too")
versions = {v["Key"]: v["Owner"]["ID"] for v in root.list_object_versions(Bucket="shared")["Versions"]}
check(versions["theirs"] == other_id, "and ListObjectVersions")
oacl = other.get_object_acl(Bucket="shared", Key="theirs")
check(oacl["Owner"]["ID"] == other_id, "the writer owns its object and may read its ACL")
other.put_object_acl(Bucket="shared", Key="theirs", ACL="private")
mpu = other.create_multipart_upload(Bucket="shared", Key="mp2")
ups = root.list_multipart_uploads(Bucket="shared")["Uploads"]
check(ups[0]["Initiator"]["ID"] == other_id, "ListMultipartUploads names the initiator")
other.abort_multipart_upload(Bucket="shared", Key="mp2", UploadId=mpu["UploadId"])
acl = root.get_bucket_acl(Bucket="shared")
mine = [g for g in acl["Grants"] if g["Grantee"].get("ID") == other_id]
check(sorted(g["Permission"] for g in mine) == ["READ", "WRITE"], "GetBucketAcl names the grants")
check(all(g["Grantee"].get("DisplayName") == ak2 for g in mine), "with the key as display name")
# A read-modify-write of the document, as consoles and tools do it.
acl.pop("ResponseMetadata")
acl["Grants"] = [g for g in acl["Grants"] if g["Permission"] != "WRITE"]
root.put_bucket_acl(Bucket="shared", AccessControlPolicy=acl)
check(code(lambda: other.put_object(Bucket="shared", Key="again", Body=b"x")) == "AccessDenied",
      "an ACL document without the WRITE grant takes it away")
check(code(lambda: root.put_object(Bucket="shared", Key="e", Body=b"x",
                                   GrantRead='emailAddress="someone@example.com"'))
      == "UnresolvableGrantByEmailAddress", "grants to e-mail addresses are refused")
check(code(lambda: root.put_object(Bucket="shared", Key="e", Body=b"x", GrantRead='id="' + "ab" * 32 + '"'))
      == "InvalidArgument", "grants to unknown canonical ids are refused")
got = code(lambda: root.put_object(Bucket="shared", Key="e", Body=b"x", ACL="public-read",
                                   GrantRead=f'id="{other_id}"'))
check(got == "InvalidRequest", f"a canned ACL and grant headers together are refused ({got})")
check(code(lambda: root.create_bucket(Bucket="logs", ACL="log-delivery-write")) == "NotImplemented",
      "log-delivery-write is refused (no access logs)")

# authenticated-read: any key lists and reads, unsigned requests do not.
root.create_bucket(Bucket="members", ACL="authenticated-read", ObjectOwnership="ObjectWriter")
root.put_object(Bucket="members", Key="m", Body=b"members only", ACL="authenticated-read")
check([o["Key"] for o in other.list_objects_v2(Bucket="members")["Contents"]] == ["m"],
      "authenticated-read bucket: another key lists")
check(other.get_object(Bucket="members", Key="m")["Body"].read() == b"members only", "and reads")
check(code(lambda: anon.list_objects_v2(Bucket="members")) == "AccessDenied", "unsigned may not list")

# Copies read their source through its ACL.
other.create_bucket(Bucket="theirown")
other.copy_object(Bucket="theirown", Key="copied", CopySource={"Bucket": "cmdacl", "Key": "pic.txt"})
check(other.get_object(Bucket="theirown", Key="copied")["Body"].read() == b"public picture",
      "another key copies a public-read object into its own bucket")
check(code(lambda: other.copy_object(Bucket="theirown", Key="c2",
                                     CopySource={"Bucket": "cmdacl", "Key": "private.txt"})) == "AccessDenied",
      "but not a private one")

# Disabling ACLs on a bucket whose objects have grants: they stop granting.
root.put_bucket_acl(Bucket="members", ACL="private")
root.put_bucket_ownership_controls(Bucket="members", OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
check(code(lambda: other.get_object(Bucket="members", Key="m")) == "AccessDenied",
      "BucketOwnerEnforced: the object's authenticated-read grant grants nothing")
check(len(root.get_object_acl(Bucket="members", Key="m")["Grants"]) == 1, "GetObjectAcl shows the owner alone")
root.delete_bucket_ownership_controls(Bucket="members")
check(other.get_object(Bucket="members", Key="m")["Body"].read() == b"members only", "deleting the controls enables ACLs again")

print("acl: all checks passed")
