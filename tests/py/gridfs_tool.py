"""PyMongo's GridFSBucket as an independent GridFS client for the interop tests.

Usage: python gridfs_tool.py URI DATABASE BUCKET < commands.json
Commands (a JSON list), each one of:
  {"op": "put", "name": NAME, "path": FILE}                 upload FILE as NAME
  {"op": "get", "name": NAME, "path": FILE}                 newest revision of NAME to FILE
  {"op": "get_range", "name": NAME, "start": A, "end": B, "path": FILE}
                                                            bytes [A, B) via seek + read
  {"op": "put_many", "prefix": P, "count": N, "size": S}    N files P00000.. of S bytes each
Prints a JSON list with one result per command (the file id as a string for put).
"""
import json
import sys

import gridfs
from pymongo import MongoClient


def main():
    uri, dbname, bucket_name = sys.argv[1:4]
    commands = json.load(sys.stdin)
    db = MongoClient(uri)[dbname]
    bucket = gridfs.GridFSBucket(db, bucket_name=bucket_name)
    results = []
    for cmd in commands:
        op = cmd["op"]
        if op == "put":
            with open(cmd["path"], "rb") as f:
                fid = bucket.upload_from_stream(cmd["name"], f)
            results.append(str(fid))
        elif op == "get":
            with open(cmd["path"], "wb") as f:
                bucket.download_to_stream_by_name(cmd["name"], f)
            results.append(None)
        elif op == "get_range":
            out = bucket.open_download_stream_by_name(cmd["name"])
            out.seek(cmd["start"])
            data = out.read(cmd["end"] - cmd["start"])
            with open(cmd["path"], "wb") as f:
                f.write(data)
            results.append(None)
        elif op == "put_many":
            data = bytes(range(256)) * (cmd["size"] // 256 + 1)
            for i in range(cmd["count"]):
                bucket.upload_from_stream("%s%05d" % (cmd["prefix"], i), data[: cmd["size"]])
            results.append(cmd["count"])
        else:
            raise SystemExit(f"unknown op {op}")
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
