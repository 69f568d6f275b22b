"""Checks the compose files without Docker: each validates against the Compose Specification
JSON schema (check-jsonschema), and every environment variable set on a grids3 service is one
grids3 reads (the list comes from `grids3 --help`, passed in as argv[1]).

Usage: python check_compose.py HELP_TEXT_FILE SCHEMA COMPOSE_FILE...
"""
import os
import re
import subprocess
import sys

import yaml

help_file, schema, *files = sys.argv[1:]
reads = set(re.findall(r"\[env: ([A-Z0-9_]+)", open(help_file).read())) | {"RUST_LOG"}
if "MONGODB_URI" not in reads:
    sys.exit(f"could not read grids3's environment variables from --help: {reads}")
bindir = os.path.dirname(sys.executable)
for f in files:
    out = subprocess.run([os.path.join(bindir, "check-jsonschema"), "--schemafile", schema, f],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{f} does not validate against the Compose schema:\n{out.stdout}{out.stderr}")
    print(f"ok: {f} validates against the Compose Specification schema")
    doc = yaml.safe_load(open(f))
    services = [(n, s) for n, s in doc["services"].items() if n.startswith("grids3")]
    if not services:
        sys.exit(f"{f}: no grids3 service")
    for name, svc in services:
        env = svc.get("environment", {})
        keys = env.keys() if isinstance(env, dict) else [e.split("=", 1)[0] for e in env]
        unknown = sorted(k for k in keys if k not in reads)
        if unknown:
            sys.exit(f"{f}: service {name} sets variables grids3 does not read: {unknown}")
        if "MONGODB_URI" not in keys:
            sys.exit(f"{f}: service {name} does not set MONGODB_URI")
    print(f"ok: {f}: every grids3 environment variable is one grids3 reads")
    if "sharded" in os.path.basename(f):
        svcs = doc["services"]
        cmd = lambda s: " ".join(s.get("command", [])) if isinstance(s.get("command"), list) else str(s.get("command", ""))
        if not any("--configsvr" in cmd(s) for s in svcs.values()):
            sys.exit(f"{f}: no config server")
        shards = [n for n, s in svcs.items() if "--shardsvr" in cmd(s)]
        if len(shards) < 2:
            sys.exit(f"{f}: fewer than two shard replica sets: {shards}")
        if not any(cmd(s).startswith("mongos ") for s in svcs.values()):
            sys.exit(f"{f}: no mongos")
        init = [s for s in svcs.values() if "sh.addShard" in cmd(s)]
        if not init or "sh.enableSharding('grids3')" not in cmd(init[0]):
            sys.exit(f"{f}: no init job that adds the shards and enables sharding")
        for name, s in services:
            env = s.get("environment", {})
            if str(env.get("GRIDS3_SHARD_BUCKETS")).lower() != "true" or "mongos" not in env.get("MONGODB_URI", ""):
                sys.exit(f"{f}: {name} must shard its buckets and connect to mongos")
        print(f"ok: {f}: config server, {len(shards)} shards, mongos, init job, grids3 sharding its buckets")
    if "tls" in os.path.basename(f):
        for name, s in services:
            env = s.get("environment", {})
            cert, key = env.get("GRIDS3_TLS_CERT", ""), env.get("GRIDS3_TLS_KEY", "")
            mounts = [v.split(":")[1] for v in s.get("volumes", []) if isinstance(v, str)]
            if not cert or not key or not all(any(p.startswith(m + "/") for m in mounts) for p in (cert, key)):
                sys.exit(f"{f}: {name} must name a certificate and key inside a mounted directory")
            if "https://" not in " ".join(s.get("healthcheck", {}).get("test", [])):
                sys.exit(f"{f}: {name}'s health check must ask over https")
            if "GRIDS3_ALLOW_INSECURE_SSE_C" in env:
                sys.exit(f"{f}: {name} serves TLS itself and must not allow SSE-C over http")
        print(f"ok: {f}: certificate and key mounted, health checked over https")
print("compose: all checks passed")
