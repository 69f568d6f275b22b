"""Issue 59's table in one run: GridFS that another program (PyMongo) wrote, listed through
grids3, against the same keys written through grids3; and PUTs of empty objects against 4 KiB
ones. Each figure is taken for every binary given, in this one run, on one in-memory
SecantusDB, with the database's CPU time (from /proc) per key and per PUT.

    .venv/bin/python benches/foreign.py OLD_BINARY NEW_BINARY [--keys 20000] [--folders 100000]
        [--big 1000000] [--old-big 50000] [--put-seconds 15]

Each binary gets buckets of its own, written by PyMongo before it starts (a binary adopts the
GridFS buckets it finds at start-up), so no binary lists what another already listed. The
bucket of grids3-written keys is written once, through the first binary, and listed by each.
Listings are raw signed HTTP (botocore's SigV4 signer, one keep-alive connection, pages of
1,000, keys counted from the XML by a regular expression): boto3's own XML parsing costs
about 56 us a key here, more than the server.
"""

import argparse
import concurrent.futures
import datetime
import http.client
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import boto3
import pymongo
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from bson import ObjectId

AK, SK = "benchroot", "benchroot-secret-key"
PY = sys.executable
CLK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cpu_seconds(pid):
    """User + system CPU seconds of `pid` and its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


class Db:
    def __init__(self):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="foreign-db-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [PY, "-m", "secantus", "--host", "127.0.0.1", "--port", str(self.port),
             "--storage-path", ":memory:", "--log-level", "WARNING", "--cache-size", "12G"],
            stdout=self.log, stderr=self.log)
        self.uri = f"mongodb://127.0.0.1:{self.port}/?directConnection=true"
        self.client = pymongo.MongoClient(self.uri)
        for _ in range(200):
            try:
                self.client.admin.command("ping")
                break
            except Exception:
                time.sleep(0.2)
        self.db = self.client["bench_foreign"]

    def cpu(self):
        return cpu_seconds(self.proc.pid)


def pymongo_write(db, bucket, names, size):
    """Writes one GridFS file per name as PyMongo's GridFSBucket stores it (files document
    `_id, length, chunkSize, uploadDate, filename`; one chunk of `size` bytes unless empty), in
    batches, with the indexes the GridFS spec has drivers create."""
    files, chunks = db[f"{bucket}.files"], db[f"{bucket}.chunks"]
    files.create_index([("filename", 1), ("uploadDate", 1)])
    chunks.create_index([("files_id", 1), ("n", 1)], unique=True)
    data = bytes(range(256)) * (size // 256 + 1)
    batch_f, batch_c = [], []
    now = datetime.datetime.now(datetime.timezone.utc)
    for name in names:
        fid = ObjectId()
        batch_f.append({"_id": fid, "length": size, "chunkSize": 261120, "uploadDate": now,
                        "filename": name})
        if size:
            batch_c.append({"files_id": fid, "n": 0, "data": data[:size]})
        if len(batch_f) == 5000:
            if batch_c:
                chunks.insert_many(batch_c, ordered=False)
            files.insert_many(batch_f, ordered=False)
            batch_f, batch_c = [], []
    if batch_c:
        chunks.insert_many(batch_c, ordered=False)
    if batch_f:
        files.insert_many(batch_f, ordered=False)


class Gateway:
    def __init__(self, binary, db, label):
        self.port = free_port()
        self.label = label
        env = dict(os.environ, MONGODB_URI=db.uri, GRIDS3_DATABASE="bench_foreign",
                   GRIDS3_ROOT_ACCESS_KEY=AK, GRIDS3_ROOT_SECRET_KEY=SK,
                   GRIDS3_LISTEN=f"127.0.0.1:{self.port}", RUST_LOG="info")
        self.log = tempfile.NamedTemporaryFile(prefix=f"foreign-{label}-", suffix=".log",
                                               delete=False)
        self.proc = subprocess.Popen([binary], env=env, stdout=self.log, stderr=self.log)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        for _ in range(300):
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/_grids3/ready")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"{label} did not start; see {self.log.name}")

    def wait_log(self, text, count, timeout):
        """Waits until the gateway's log holds `text` `count` times (background jobs' ends)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(self.log.name, errors="replace") as f:
                if f.read().count(text) >= count:
                    return True
            time.sleep(0.5)
        return False

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


class Raw:
    """Signed S3 requests on one keep-alive connection."""

    def __init__(self, gw):
        self.gw = gw
        self.conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=600)
        self.signer = SigV4Auth(Credentials(AK, SK), "s3", "us-east-1")

    errors = 0

    def get(self, path, query):
        qs = urllib.parse.urlencode(sorted(query.items()), quote_via=urllib.parse.quote)
        url = f"{self.gw.endpoint}{path}?{qs}"
        # A page that times out (503: the old code's per-key reads and writes) is asked again,
        # as a client retries it, and counted.
        for _ in range(20):
            req = AWSRequest(method="GET", url=url,
                             headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
            self.signer.add_auth(req)
            self.conn.request("GET", f"{path}?{qs}", headers=dict(req.headers.items()))
            r = self.conn.getresponse()
            body = r.read()
            if r.status == 200:
                return body
            Raw.errors += 1
            print(f"  {r.status} on {path}?{qs[:80]}, asked again", flush=True)
        raise SystemExit(f"{url}: {r.status} {body[:300]!r}")


KEY = re.compile(rb"<Key>")
TOKEN = re.compile(rb"<NextContinuationToken>([^<]*)</NextContinuationToken>")
PREFIX = re.compile(rb"<CommonPrefixes>")


def full_pass(gw, db, bucket, limit=None):
    """A full ListObjectsV2 pass in pages of 1,000: (keys, seconds, database CPU seconds)."""
    raw = Raw(gw)
    keys, token = 0, None
    cpu0, t0 = db.cpu(), time.perf_counter()
    while True:
        q = {"list-type": "2", "max-keys": "1000"}
        if token:
            q["continuation-token"] = token
        body = raw.get(f"/{bucket}", q)
        keys += len(KEY.findall(body))
        m = TOKEN.search(body)
        if not m or (limit and keys >= limit):
            break
        token = m.group(1).decode()
    return keys, time.perf_counter() - t0, db.cpu() - cpu0


def delimiter_listing(gw, db, bucket):
    raw = Raw(gw)
    cpu0, t0 = db.cpu(), time.perf_counter()
    body = raw.get(f"/{bucket}", {"list-type": "2", "delimiter": "/"})
    return len(PREFIX.findall(body)), time.perf_counter() - t0, db.cpu() - cpu0


def s3client(gw):
    return boto3.client("s3", endpoint_url=gw.endpoint, region_name="us-east-1",
                        aws_access_key_id=AK, aws_secret_access_key=SK,
                        config=Config(max_pool_connections=64, retries={"max_attempts": 1}))


def puts(gw, db, bucket, size, seconds, threads=32):
    """PUTs of `size` bytes from `threads` boto3 threads for `seconds`: (PUT/s, database CPU
    ms per PUT, errors)."""
    s3 = s3client(gw)
    try:
        s3.create_bucket(Bucket=bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    body = os.urandom(size)
    stop = time.time() + seconds
    done, errors = [0], [0]
    lock = threading.Lock()

    def work(t):
        i = 0
        while time.time() < stop:
            try:
                s3.put_object(Bucket=bucket, Key=f"t{t}/k{i}", Body=body)
                with lock:
                    done[0] += 1
            except Exception:
                with lock:
                    errors[0] += 1
            i += 1

    cpu0, t0 = db.cpu(), time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        list(ex.map(work, range(threads)))
    el, cpu = time.perf_counter() - t0, db.cpu() - cpu0
    return done[0] / el, 1000 * cpu / max(done[0], 1), errors[0]


def grids3_write(gw, bucket, names):
    s3 = s3client(gw)
    s3.create_bucket(Bucket=bucket)
    with concurrent.futures.ThreadPoolExecutor(32) as ex:
        list(ex.map(lambda n: s3.put_object(Bucket=bucket, Key=n, Body=b"x" * 100), names))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--keys", type=int, default=20000)
    ap.add_argument("--folders", type=int, default=100000)
    ap.add_argument("--big", type=int, default=1000000)
    ap.add_argument("--old-big", type=int, default=50000)
    ap.add_argument("--put-seconds", type=float, default=15)
    ap.add_argument("--put-rounds", type=int, default=3)
    a = ap.parse_args()
    db = Db()
    print(f"database: SecantusDB pid {db.proc.pid}, {db.uri}", flush=True)
    names = [f"data/{i:07d}.bin" for i in range(a.keys)]
    folder_names = [f"p{i % 100:02d}/k{i:07d}" for i in range(a.folders)]
    rows = []
    for n, binary in enumerate(a.binaries):
        label = f"bin{n}"
        big = a.big if n == len(a.binaries) - 1 else a.old_big
        t0 = time.perf_counter()
        pymongo_write(db.db, f"py-{label}", names, 100)
        pymongo_write(db.db, f"pyd-{label}", folder_names, 100)
        pymongo_write(db.db, f"pybig-{label}", (f"big/{i:08d}" for i in range(big)), 0)
        print(f"{label}: PyMongo wrote {a.keys} + {a.folders} + {big} keys in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        # A binary still being built: wait for a file that says it is done.
        while n > 0 and os.environ.get("WAIT_FOR") and not os.path.exists(os.environ["WAIT_FOR"]):
            time.sleep(2)
        gw = Gateway(binary, db, label)
        print(f"{label}: {binary} (pid {gw.proc.pid}) on {gw.endpoint}", flush=True)
        if n == 0:
            t0 = time.perf_counter()
            grids3_write(gw, "native", names)
            print(f"grids3 wrote {a.keys} keys in {time.perf_counter() - t0:.0f} s", flush=True)
        # An adopted bucket's fence posts may be built in the background: wait for that.
        # (A binary that builds them says so in its log; one that does not has no such line.)
        t0 = time.perf_counter()
        with open(binary, "rb") as f:
            builds_posts = b"listing posts built" in f.read()
        if builds_posts:
            gw.wait_log("listing posts built", 3, 3600)
            print(f"{label}: posts of its 3 adopted buckets built in "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
        r = {"label": label, "binary": binary}
        # A listing of another binary's buckets would have been adopted too; list its own.
        for what, bucket in [("native", "native"), ("foreign", f"py-{label}")]:
            k, s, c = full_pass(gw, db, bucket)
            r[what] = (k, s, c)
            print(f"{label}: full pass {what:8s} {k} keys {s:6.2f} s {k / s:8.0f} keys/s "
                  f"db CPU {1e6 * c / k:6.1f} us/key", flush=True)
            if what == "foreign":
                k2, s2, c2 = full_pass(gw, db, bucket)
                r["foreign2"] = (k2, s2, c2)
                print(f"{label}: again     {what:8s} {k2} keys {s2:6.2f} s {k2 / s2:8.0f} keys/s "
                      f"db CPU {1e6 * c2 / k2:6.1f} us/key", flush=True)
        k, s, c = delimiter_listing(gw, db, f"pyd-{label}")
        k2, s2, c2 = delimiter_listing(gw, db, f"pyd-{label}")
        r["delim"] = (s, s2)
        print(f"{label}: root delimiter listing over {a.folders} PyMongo keys: {k} prefixes, "
              f"first {s:.3f} s (db CPU {c:.2f} s), again {s2:.3f} s", flush=True)
        k, s, c = full_pass(gw, db, f"pybig-{label}")
        r["big"] = (k, s, c)
        print(f"{label}: full pass over {k} PyMongo keys: {s:.1f} s, {k / s:.0f} keys/s, "
              f"db CPU {1e6 * c / k:.1f} us/key", flush=True)
        put_rows = []
        for rnd in range(a.put_rounds):
            for size in (0, 4096):
                rate, ms, err = puts(gw, db, f"put{size}-{label}-{rnd}", size, a.put_seconds)
                put_rows.append((size, rate, ms, err))
                print(f"{label}: PUT {size:5d} B round {rnd}: {rate:7.1f} PUT/s, db CPU "
                      f"{ms:6.2f} ms/PUT, errors {err}", flush=True)
        med = {size: (statistics.median(p[1] for p in put_rows if p[0] == size),
                      statistics.median(p[2] for p in put_rows if p[0] == size))
               for size in (0, 4096)}
        r["puts"] = med
        print(f"{label}: PUT medians: 0 B {med[0][0]:.1f}/s ({med[0][1]:.2f} ms db), 4 KiB "
              f"{med[4096][0]:.1f}/s ({med[4096][1]:.2f} ms db), ratio "
              f"{med[0][0] / med[4096][0]:.2f}", flush=True)
        gw.stop()
        rows.append(r)
    print()
    print("| binary | foreign pass keys/s (us db/key) | native pass keys/s (us db/key) | ratio "
          "| again | delimiter first / again | big pass keys/s (us db/key) | PUT 0 B / 4 KiB /s "
          "(ms db) | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f, nat, f2, b = r["foreign"], r["native"], r["foreign2"], r["big"]
        p = r["puts"]
        print(f"| {r['binary']} | {f[0] / f[1]:.0f} ({1e6 * f[2] / f[0]:.0f}) | "
              f"{nat[0] / nat[1]:.0f} ({1e6 * nat[2] / nat[0]:.0f}) | "
              f"{(f[0] / f[1]) / (nat[0] / nat[1]):.2f} | {f2[0] / f2[1]:.0f} | "
              f"{r['delim'][0]:.2f} / {r['delim'][1]:.2f} s | {b[0] / b[1]:.0f} over {b[0]} "
              f"({1e6 * b[2] / b[0]:.0f}) | {p[0][0]:.0f} ({p[0][1]:.1f}) / {p[4096][0]:.0f} "
              f"({p[4096][1]:.1f}) | {p[0][0] / p[4096][0]:.2f} |")
    db.proc.terminate()


if __name__ == "__main__":
    main()
