// minio-js (from npm) as its functional suite and applications call it:
// - issue 40, item 6: removeObject with `forceDelete: true` (it sends `x-minio-force-delete:
//   true`) removes every object and version under a prefix;
// - issue 64, items 2 to 4: listenBucketNotification (a bad event refused in AWS's words;
//   records named as MinIO names them; a listener of removals gets no creations),
//   setBucketTagging and its neighbours, and removeObject('/my-prefix', {forceDelete: true})
//   with the leading slash the suite sends (refused: see force_delete.rs).
// Usage: node minio_js.mjs ENDPOINT ACCESS_KEY SECRET_KEY
import * as Minio from 'minio'

const [endpoint, accessKey, secretKey] = process.argv.slice(2)
const url = new URL(endpoint)
const mc = new Minio.Client({
  endPoint: url.hostname,
  port: Number(url.port),
  useSSL: false,
  accessKey,
  secretKey,
  region: 'us-east-1',
  pathStyle: true,
})

function check(cond, what) {
  if (!cond) {
    console.log(`FAILED: ${what}`)
    process.exit(1)
  }
  console.log(`ok: ${what}`)
}

async function keys(bucket) {
  const out = []
  for await (const o of mc.listObjectsV2(bucket, '', true)) out.push(o.name)
  return out.sort()
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/// Waits until `cond()` holds, at most `ms`.
async function until(cond, ms) {
  const end = Date.now() + ms
  while (!cond() && Date.now() < end) await sleep(100)
  return cond()
}

// Issue 40, item 6.
{
  const b = 'minio-js-force'
  await mc.makeBucket(b, 'us-east-1')
  for (const k of ['run/1/a', 'run/1/b', 'run/2/c', 'runner', 'other']) {
    await mc.putObject(b, k, Buffer.from('x'))
  }
  await mc.removeObject(b, 'run/', { forceDelete: true })
  const left = await keys(b)
  check(JSON.stringify(left) === JSON.stringify(['other', 'runner']), `removeObject forceDelete removes run/ and only it (${left})`)
  
  const v = 'minio-js-force-versions'
  await mc.makeBucket(v, 'us-east-1')
  await mc.setBucketVersioning(v, { Status: 'Enabled' })
  await mc.putObject(v, 'tmp/x', Buffer.from('1'))
  await mc.putObject(v, 'tmp/x', Buffer.from('2'))
  await mc.putObject(v, 'keep', Buffer.from('k'))
  await mc.removeObject(v, 'tmp/', { forceDelete: true })
  const versions = []
  for await (const o of mc.listObjects(v, '', true, { IncludeVersion: true })) versions.push(o.name)
  check(JSON.stringify(versions) === JSON.stringify(['keep']), `and every version in a versioned bucket (${versions})`)
  // Without the option it is AWS's DeleteObject of the one key.
  await mc.putObject(b, 'run/again', Buffer.from('x'))
  await mc.removeObject(b, 'run/')
  check((await keys(b)).includes('run/again'), 'without forceDelete, run/ is one key (none here) and run/again stays')
}

const b = 'minio-js-fidelity'
await mc.makeBucket(b, 'us-east-1')

// 2. A bad event type: the poller's error is AWS's.
{
  const poller = mc.listenBucketNotification(b, 'photos/', '.jpg', ['bad'])
  let error = null
  poller.on('error', (e) => {
    error = e
  })
  await until(() => error !== null, 10000)
  poller.stop()
  check(
    error && error.code === 'InvalidArgument' && /A specified event is not supported for notifications./.test(error.message),
    `listen with event 'bad': InvalidArgument, "A specified event is not supported for notifications." (${error && error.code}: ${error && error.message})`,
  )
}

// A listener of creations gets the PUT's record, named as MinIO names it. (Instances read
// the listener registry once a second: a PUT right after the listen may go unseen, so PUTs
// are repeated until one is heard.)
{
  const poller = mc.listenBucketNotification(b, '', '', ['s3:ObjectCreated:*'])
  const records = []
  let error = null
  poller.on('notification', (r) => records.push(r))
  poller.on('error', (e) => {
    error = e
  })
  for (let i = 0; i < 20 && records.length === 0 && !error; i++) {
    await mc.putObject(b, 'heard', Buffer.from('stringdata'))
    await until(() => records.length > 0, 1000)
  }
  poller.stop()
  check(!error, `no listen error (${error})`)
  const r = records[0]
  check(
    r && r.eventName === 's3:ObjectCreated:Put' && r.s3.bucket.name === b && r.s3.object.key === 'heard',
    `a creation's record: s3:ObjectCreated:Put of ${b}/heard (${JSON.stringify(r && [r.eventName, r.s3.object.key])})`,
  )
}

// A listener of removals gets the removal, and no creation before it.
{
  const poller = mc.listenBucketNotification(b, '', '', ['s3:ObjectRemoved:*'])
  const records = []
  poller.on('notification', (r) => records.push(r))
  poller.on('error', () => {})
  for (let i = 0; i < 20 && records.length === 0; i++) {
    await mc.putObject(b, 'gone', Buffer.from('stringdata'))
    await mc.removeObject(b, 'gone')
    await until(() => records.length > 0, 1000)
  }
  poller.stop()
  check(records.length > 0, 'a removal is heard')
  check(
    records.every((r) => r.eventName === 's3:ObjectRemoved:Delete'),
    `only removals are heard (${records.map((r) => r.eventName)})`,
  )
}

// 4. Bucket tagging as the suite's "Set tags on a bucket" and its neighbours.
await mc.setBucketTagging(b, { 'test-tag-key': 'test-tag-value' })
const tags = await mc.getBucketTagging(b)
check(
  JSON.stringify(tags) === JSON.stringify([{ Key: 'test-tag-key', Value: 'test-tag-value' }]),
  `setBucketTagging then getBucketTagging (${JSON.stringify(tags)})`,
)
await mc.removeBucketTagging(b)
let afterRemoval
try {
  afterRemoval = await mc.getBucketTagging(b)
} catch (e) {
  afterRemoval = e.code
}
check(
  afterRemoval === 'NoSuchTagSet' || (Array.isArray(afterRemoval) && afterRemoval.length === 0),
  `removeBucketTagging leaves no tags (${JSON.stringify(afterRemoval)})`,
)

// 3. The suite's "Force Deletion of prefix" names the prefix with a leading slash, which is
// part of an S3 key and which MinIO drops: refused, and nothing removed; without the slash
// the prefix goes.
for (const k of ['my-prefix/datafile-100-kB', 'my-prefix/deeper/x', 'my-prefixx/z', '/my-prefix/real']) {
  await mc.putObject(b, k, Buffer.from('x'))
}
let refused = null
try {
  await mc.removeObject(b, '/my-prefix', { forceDelete: true })
} catch (e) {
  refused = e
}
const all = async () => {
  const out = []
  for await (const o of mc.listObjects(b, '', true)) out.push(o.name)
  return out.sort()
}
check(
  refused && refused.code === 'InvalidArgument' && /leading slash/.test(refused.message),
  `removeObject('/my-prefix', {forceDelete: true}) is refused: ${refused && refused.code}: ${refused && refused.message}`,
)
check(
  JSON.stringify(await all()) ===
    JSON.stringify(['/my-prefix/real', 'heard', 'my-prefix/datafile-100-kB', 'my-prefix/deeper/x', 'my-prefixx/z']),
  `and nothing is removed (${await all()})`,
)
await mc.removeObject(b, 'my-prefix', { forceDelete: true })
check(
  JSON.stringify(await all()) === JSON.stringify(['/my-prefix/real', 'heard', 'my-prefixx/z']),
  `removeObject('my-prefix', {forceDelete: true}) removes my-prefix/ and only it (${await all()})`,
)
console.log('minio_js: all checks passed')
// A stopped poller's request stays open until the server ends it (minio-js stops asking for
// more, but does not abort the request in flight).
process.exit(0)
