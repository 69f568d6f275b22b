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
print("compose: all checks passed")
