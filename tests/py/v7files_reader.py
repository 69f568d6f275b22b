"""An independent reader of the v7files storage format, written from the format's description
(not from grids3's code), as another application reading a content-addressed bucket would be.

Layout of a bucket B:
- B.files: one document per object revision: filename, length, uploadDate, contentType, and
  either `in` (the bytes) or `sha` (20-byte SHA-1 of the bytes);
- B._content: content documents keyed by SHA-1: {in}, {store: "gz", zin, length},
  {store: "cat", base: [{sha | in, length, off?}]};
- B._blobs: a GridFS bucket of large contents whose file _id is the SHA-1;
- B._refs: {_id: owner, refs: [sha], refHistory: [sha], purge?} per object.
"""
import gzip
import hashlib

import gridfs


class V7Reader:
    def __init__(self, db, bucket):
        self.db = db
        self.bucket = bucket
        self.content = db[f"{bucket}._content"]
        self.blobs = gridfs.GridFSBucket(db, bucket_name=f"{bucket}._blobs")

    def object_doc(self, key):
        """The newest revision of `key`."""
        return self.db[f"{self.bucket}.files"].find_one({"filename": key}, sort=[("uploadDate", -1), ("_id", -1)])

    def content_bytes(self, sha):
        d = self.content.find_one({"_id": sha})
        if d is None:
            # Large contents are GridFS files named by their SHA-1.
            return self.blobs.open_download_stream(sha).read()
        store = d.get("store")
        if store in (None, "raw"):
            data = bytes(d["in"])
        elif store == "gz":
            data = gzip.decompress(bytes(d["zin"]))
            assert len(data) == d["length"], "gz length describes the uncompressed data"
        elif store == "cat":
            data = b""
            for b in d["base"]:
                part = bytes(b["in"]) if "in" in b else self.content_bytes(b["sha"])
                off = b.get("off", 0)
                data += part[off:off + b.get("length", len(part) - off)]
        else:
            raise ValueError(f"unknown store {store!r}")
        assert hashlib.sha1(data).digest() == bytes(sha), "a content is named by its SHA-1"
        return data

    def read(self, key):
        doc = self.object_doc(key)
        if doc is None:
            return None
        return self.read_doc(doc)

    def read_doc(self, doc):
        """The bytes of one object document (any revision)."""
        if "in" in doc:
            data = bytes(doc["in"])
        else:
            data = self.content_bytes(doc["sha"])
        assert len(data) == doc["length"], "the object's length"
        return data
