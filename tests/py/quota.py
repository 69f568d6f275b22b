"""Bucket quotas (issue 62) through real clients: minio-py's MinioAdmin sets, reads and
clears the limit; boto3 and minio-py see the refusal (400 XMinioAdminBucketQuotaExceeded).
The limit is exact: a write that fills it to the byte is accepted, one byte more refused.

Usage: python quota.py ENDPOINT ROOT_KEY ROOT_SECRET
Prints `RESULT {...}`: what each step saw.
"""
import io
import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
from minio import Minio, MinioAdmin
from minio.credentials import StaticProvider
from minio.error import S3Error

endpoint, ak, sk = sys.argv[1:4]
host = endpoint.split("://", 1)[1]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                  region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
admin = MinioAdmin(endpoint=host, credentials=StaticProvider(ak, sk), secure=False)
mc = Minio(host, access_key=ak, secret_key=sk, secure=False)
result = {}


def put(key, n):
    try:
        s3.put_object(Bucket="quota-q", Key=key, Body=b"x" * n)
        return "ok"
    except ClientError as e:
        return [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"],
                e.response["Error"]["Message"]]


s3.create_bucket(Bucket="quota-q")
s3.put_object(Bucket="quota-q", Key="before", Body=b"b" * 10)
result["get_unset"] = json.loads(admin.bucket_quota_get("quota-q"))
admin.bucket_quota_set("quota-q", 1000)
result["get_set"] = json.loads(admin.bucket_quota_get("quota-q"))
# 10 bytes were there before the limit: they count. 990 more fill it exactly.
result["fill"] = put("fill", 990)
result["one_more"] = put("one", 1)
result["empty_object"] = put("empty", 0)
try:
    mc.put_object("quota-q", "mc", io.BytesIO(b"m"), 1)
    result["minio_py"] = "ok"
except S3Error as e:
    result["minio_py"] = [e.code, e.message]
s3.delete_object(Bucket="quota-q", Key="fill")
result["over_by_one"] = put("fill2", 991)
result["exactly"] = put("fill2", 990)
admin.bucket_quota_clear("quota-q")
result["get_cleared"] = json.loads(admin.bucket_quota_get("quota-q"))
result["after_clear"] = put("big", 5000)
print("RESULT " + json.dumps(result))
