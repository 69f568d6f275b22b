// Issue 40, item 6: minio-js's removeObject with `forceDelete: true` (it sends
// `x-minio-force-delete: true`) removes every object and version under a prefix.
// Usage: node force_delete.mjs ENDPOINT ACCESS_KEY SECRET_KEY
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
console.log('minio_js: all checks passed')
