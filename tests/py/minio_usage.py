"""MinIO's `datausageinfo` (issue 62) through minio-py's MinioAdmin.get_data_usage_info,
against buckets whose contents the script knows: an unversioned bucket with a multipart
upload in progress, a versioned one with noncurrent versions and a delete marker.

Usage: python minio_usage.py ENDPOINT ROOT_KEY ROOT_SECRET OTHER_ACCOUNT_KEY OTHER_SECRET
Prints `RESULT {...}`: the answer as minio-py returned it, and another account's.
"""
import json
import sys

import boto3
from botocore.config import Config
from minio import MinioAdmin
from minio.credentials import StaticProvider
from minio.error import MinioAdminException
from minio.minioadmin import _COMMAND

endpoint, ak, sk, ak2, sk2 = sys.argv[1:6]
host = endpoint.split("://", 1)[1]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="plain")
s3.put_object(Bucket="plain", Key="a", Body=b"x" * 5)
s3.put_object(Bucket="plain", Key="dir/b", Body=b"y" * 3)
up = s3.create_multipart_upload(Bucket="plain", Key="big")["UploadId"]
s3.upload_part(Bucket="plain", Key="big", UploadId=up, PartNumber=1, Body=b"p" * 100)
s3.upload_part(Bucket="plain", Key="big", UploadId=up, PartNumber=2, Body=b"q" * 50)
s3.create_bucket(Bucket="ver")
s3.put_bucket_versioning(Bucket="ver", VersioningConfiguration={"Status": "Enabled"})
s3.put_object(Bucket="ver", Key="k", Body=b"1234")
s3.put_object(Bucket="ver", Key="k", Body=b"123456")
s3.delete_object(Bucket="ver", Key="k")
s3.put_object(Bucket="ver", Key="j", Body=b"1")

result = {"root": json.loads(MinioAdmin(endpoint=host, credentials=StaticProvider(ak, sk),
                                         secure=False).get_data_usage_info()),
          "other": json.loads(MinioAdmin(endpoint=host, credentials=StaticProvider(ak2, sk2),
                                          secure=False).get_data_usage_info())}
# madmin's `capacity=true` asks for the disks' capacity, which grids3 does not measure: refused,
# not answered without it.
try:
    MinioAdmin(endpoint=host, credentials=StaticProvider(ak, sk), secure=False)._url_open(
        method="GET", command=_COMMAND.DATA_USAGE_INFO, query_params={"capacity": "true"})
    result["capacity"] = "accepted"
except MinioAdminException as e:
    result["capacity"] = [int(e._code), json.loads(e._body).get("Code")]
print("RESULT " + json.dumps(result))
