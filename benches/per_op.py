"""Fixed-count phases against a gateway on 127.0.0.1:9171 (started by benches/per_op_ab.sh
with --mongodb-command-metrics), through boto3 with 8 threads: 3,000 PUTs of 4 KiB, 2,000 GETs,
2,000 HEADs, 400 LISTs of 100 keys, 1,500 DELETEs. For each phase it prints the wall time, the
database's and the gateway's CPU time per operation (from /proc), and the driver's commands per
operation by name (from the gateway's metrics). Unlike `grids3 bench`'s timed rows, every
build does the same operations on the same population, so the figures compare builds directly.

Usage: per_op.py DB_PID GATEWAY_PID
"""
import sys, time, threading, urllib.request, re, collections, boto3
from botocore.config import Config
dbpid, gwpid = sys.argv[1], sys.argv[2]
EP = "http://127.0.0.1:9171"
CONC = 8
def client():
    return boto3.client("s3", endpoint_url=EP, aws_access_key_id="benchroot",
        aws_secret_access_key="benchroot-secret-key", region_name="us-east-1",
        config=Config(max_pool_connections=64, retries={"max_attempts": 1}))
def cpu(p):
    f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100.0
def snap():
    m = collections.Counter()
    for line in urllib.request.urlopen(EP + "/_grids3/metrics").read().decode().splitlines():
        r = re.match(r'grids3_mongodb_command_duration_seconds_count\{command="(\w+)"\} (\S+)', line)
        if r: m[r.group(1)] += float(r.group(2))
    return m
b = "grids3-bench"
s3 = client()
s3.create_bucket(Bucket=b)
body = b"x" * 4096
def run(name, items, fn):
    errs = [0]
    def work(its):
        c = client()
        for it in its:
            try: fn(c, it)
            except Exception as e: errs[0] += 1
    m0, d0, g0, t0 = snap(), cpu(dbpid), cpu(gwpid), time.time()
    ts = [threading.Thread(target=work, args=(items[i::CONC],)) for i in range(CONC)]
    [t.start() for t in ts]; [t.join() for t in ts]
    t1, d1, g1, m1 = time.time(), cpu(dbpid), cpu(gwpid), snap()
    n = len(items)
    cmds = {k: round((m1[k] - m0[k]) / n, 2) for k in m1 if m1[k] - m0[k] > 0}
    print(f"{name:7} n={n} wall/op {1000*(t1-t0)/n:6.2f} ms  db cpu/op {1000*(d1-d0)/n:6.2f} ms  gw cpu/op {1000*(g1-g0)/n:5.2f} ms  errors {errs[0]}  cmds/op {cmds}", flush=True)
keys = [f"k{i:06d}" for i in range(3000)]
run("put", keys, lambda c, k: c.put_object(Bucket=b, Key=k, Body=body))
run("get", keys[:2000], lambda c, k: c.get_object(Bucket=b, Key=k)["Body"].read())
run("head", keys[:2000], lambda c, k: c.head_object(Bucket=b, Key=k))
run("list", keys[:2000:5], lambda c, k: c.list_objects_v2(Bucket=b, StartAfter=k, MaxKeys=100))
run("delete", keys[:1500], lambda c, k: c.delete_object(Bucket=b, Key=k))
