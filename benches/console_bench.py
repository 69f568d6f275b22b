"""The console's figures (run by benches/console.sh, which starts the database and gateway).

Usage: console_bench.py S3_URL CONSOLE_URL MONGODB_URI DATABASE CHROMIUM KEYS MIB WORK AWS

1. A bucket with KEYS keys in one folder (`f/`), written as GridFS files documents in
   batches (as another GridFS writer would fill it; PUTs at this count would take minutes).
   The folder's first page is opened in the console, cold (the first listing of the bucket)
   and then 5 times warm (median), and the next page once.
2. A file of MIB MiB is uploaded 3 times through the console (the browser's multipart path:
   parts PUT straight to the S3 endpoint) and 3 times with `aws s3 cp` (its own multipart,
   8 MiB parts, 10 at once); medians in MB/s and their ratio.
"""

import datetime
import os
import statistics
import subprocess
import sys
import time

import boto3
import pymongo
from bson import ObjectId
from playwright.sync_api import sync_playwright

s3_url, console, mongo_uri, db_name, chromium, keys, mib, work, aws = sys.argv[1:10]
keys, mib = int(keys), int(mib)
ak, sk = os.environ["GRIDS3_ROOT_ACCESS_KEY"], os.environ["GRIDS3_ROOT_SECRET_KEY"]
s3 = boto3.client("s3", endpoint_url=s3_url, aws_access_key_id=ak, aws_secret_access_key=sk,
                  region_name="us-east-1")

s3.create_bucket(Bucket="folder")
files = pymongo.MongoClient(mongo_uri)[db_name]["folder.files"]
t = time.time()
now = datetime.datetime.now(datetime.timezone.utc)
batch = []
for i in range(keys):
    batch.append({"_id": ObjectId(), "length": 0, "chunkSize": 261120, "uploadDate": now,
                  "filename": f"f/k{i:07d}", "metadata": {"etag": '"d41d8cd98f00b204e9800998ecf8427e"'}})
    if len(batch) == 5000:
        files.insert_many(batch)
        batch = []
if batch:
    files.insert_many(batch)
print(f"filled {keys} keys under f/ in {time.time() - t:.1f} s")
s3.create_bucket(Bucket="uploads")
path = os.path.join(work, "upload.bin")
with open(path, "wb") as f:
    for _ in range(mib):
        f.write(os.urandom(1024 * 1024))

with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium,
                                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    page = browser.new_page()
    page.goto(console + "/login")
    page.fill("#access_key", ak)
    page.fill("#secret", sk)
    page.click("button[type=submit]")
    page.wait_for_selector("#buckets")

    def open_folder():
        t = time.time()
        page.goto(console + "/browse?bucket=folder&prefix=f/")
        page.wait_for_selector("#objects a.key")
        return time.time() - t

    cold = open_folder()
    warm = [open_folder() for _ in range(5)]
    shown = page.eval_on_selector_all("#objects a.key", "els => els.length")
    t = time.time()
    page.click("#next")
    page.wait_for_selector("#objects a.key")
    nxt = time.time() - t
    print(f"folder of {keys} keys, first page ({shown} keys): cold {cold * 1000:.0f} ms, "
          f"warm median {statistics.median(warm) * 1000:.0f} ms (of 5); next page {nxt * 1000:.0f} ms")

    size = mib * 1024 * 1024
    browser_rates = []
    for i in range(3):
        page.goto(console + "/browse?bucket=uploads")
        page.wait_for_selector("#upload")
        t = time.time()
        page.set_input_files("#pick-files", path)
        page.wait_for_selector("#queue li[data-state=done], #queue li[data-state=failed]", timeout=600_000)
        secs = time.time() - t
        state = page.eval_on_selector("#queue li", "e => e.dataset.state")
        if state != "done":
            sys.exit("the browser upload failed: " + page.text_content("#queue li"))
        browser_rates.append(size / 1e6 / secs)
    browser.close()

env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk, AWS_DEFAULT_REGION="us-east-1")
cli_rates = []
for i in range(3):
    t = time.time()
    subprocess.run([aws, "--endpoint-url", s3_url, "s3", "cp", "--only-show-errors", path, f"s3://uploads/cli{i}.bin"],
                   check=True, env=env)
    cli_rates.append(size / 1e6 / (time.time() - t))
b, c = statistics.median(browser_rates), statistics.median(cli_rates)
print(f"upload of {mib} MiB: console (browser multipart) median {b:.1f} MB/s "
      f"{[round(r, 1) for r in browser_rates]}; aws s3 cp median {c:.1f} MB/s "
      f"{[round(r, 1) for r in cli_rates]}; ratio {b / c:.2f}")
