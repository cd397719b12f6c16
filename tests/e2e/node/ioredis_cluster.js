// ioredis's Cluster driven line by line (line_driver.js).
//   node ioredis_cluster.js HOST:PORT   (one seed node; the rest from CLUSTER SLOTS)
// ioredis routes by its built-in table of Redis's commands: one it does not
// know (BF.*, CMS.*, ...) has no slot, goes to any node and follows -MOVED.
// Ops: call (cluster.call), batch (commands sent at once, each routed on its
// own), pipeline (its explicit pipeline, which must stay on one node), multi
// (MULTI/EXEC), bench (bench_direct: a plain client to one node).
// write_wait: a write, then WAIT on the connection that ran it (see writeWait).
// Not enableAutoPipelining: it groups call()'s commands by the slot of their
// first argument, the command's name, not its key.
'use strict';
const Redis = require('ioredis');
const calculateSlot = require('cluster-key-slot');
const { serve, timeRequests } = require('./line_driver');

const [host, port] = process.argv[2].split(':');
const cluster = new Redis.Cluster([{ host, port: Number(port) }], {
  clusterRetryStrategy: () => null,
  redisOptions: { connectTimeout: 5000, maxRetriesPerRequest: 1 },
});
cluster.on('error', (err) => process.stderr.write(`cluster error: ${err.message}\n`));
let refreshes = 0;
cluster.on('refresh', () => { refreshes += 1; });

function send({ args }) {
  return cluster.call(...args.map(String));
}

// The error of a failed step of a pipeline or transaction, else its reply.
const replies = (results) => results.map(([err, value]) => (err ? { error: err.message } : value));

async function batch(commands) {
  const settled = await Promise.allSettled(commands.map(send));
  return settled.map((s) => (s.status === 'fulfilled' ? s.value : { error: s.reason.message }));
}

// The write goes in one pipeline behind EXISTS of its key, a command ioredis
// routes by key, so the pipeline goes to the key's node and is sent again
// where -MOVED says. WAIT counts only the writes of its own connection: it
// goes to the node the slot map named when the write was sent, and only
// when neither a -MOVED nor a refresh changed that map meanwhile (else the
// write may have run elsewhere, and `waited` is null: unknown). Without
// `replicas` there is no WAIT (`waited` null).
async function writeWait({ key, args, replicas, timeout }) {
  const slot = calculateSlot(key);
  const owner = () => (cluster.slots[slot] || [])[0];
  const before = { node: owner(), refreshes };
  const results = await cluster.pipeline([['exists', key], ['call', ...args.map(String)]]).exec();
  const [err, reply] = results[1];
  if (err) throw err;
  const node = owner();
  if (replicas === undefined || replicas === null) return { reply, node: node || null, waited: null };
  if (node === undefined || node !== before.node || refreshes !== before.refreshes) {
    return { reply, node: node || null, waited: null };
  }
  const instance = cluster.connectionPool.getInstanceByKey(node);
  if (!instance) return { reply, node, waited: null };
  // Refused (the node was demoted meanwhile): the write stands, unwaited.
  const waited = await instance.call('WAIT', String(replicas), String(timeout)).catch(() => 0);
  return { reply, node, waited };
}

const handlers = {
  write_wait: (r) => writeWait(r),
  call: (r) => send(r),
  batch: (r) => batch(r.commands),
  pipeline: async (r) => replies(await cluster.pipeline(r.commands.map((c) => ['call', ...c.args.map(String)])).exec()),
  multi: async (r) => {
    const results = await cluster.multi(r.commands.map((c) => ['call', ...c.args.map(String)])).exec();
    return results === null ? null : replies(results);
  },
  bench: (r) => timeRequests(() => send(r), r.count),
  // The same requests through a plain client to one node, for comparison.
  bench_direct: async (r) => {
    const [h, p] = r.address.split(':');
    const client = new Redis(Number(p), h, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await client.connect();
    try {
      return await timeRequests(() => client.call(...r.args.map(String)), r.count);
    } finally {
      await client.quit();
    }
  },
};

// Requests wait in stdin's pipe until the slot map is read.
const endedEarly = () => {
  process.stderr.write('the cluster connection ended before it was ready\n');
  process.exit(2);
};
cluster.once('end', endedEarly);
cluster.once('ready', () => {
  cluster.off('end', endedEarly);
  serve(handlers, async () => { await cluster.quit(); });
});
