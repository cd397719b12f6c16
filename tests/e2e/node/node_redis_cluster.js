// node-redis's createCluster driven line by line (line_driver.js).
//   node node_redis_cluster.js HOST:PORT   (one seed node; the rest from CLUSTER SLOTS)
// Ops: typed (the library's own method, e.g. bf.add: it compiles the key
// position), call (sendCommand with the key we name: how node-redis routes
// commands it has no method for, e.g. CBF.*), batch (commands sent at once:
// node-redis pipelines them per node), multi (MULTI/EXEC routed by its first
// key), bench (sequential timing; bench_direct: a plain client to one node).
'use strict';
const { createClient, createCluster } = require('redis');
const { serve, timeRequests } = require('./line_driver');

const [host, port] = process.argv[2].split(':');
const cluster = createCluster({
  rootNodes: [{ socket: { host, port: Number(port), connectTimeout: 5000, reconnectStrategy: false } }],
});
cluster.on('error', (err) => process.stderr.write(`cluster error: ${err.message}\n`));

// "bf.add" -> cluster.bf.add, bound to its family object.
function method(path) {
  const [family, name] = path.split('.');
  const fn = cluster[family] && cluster[family][name];
  if (typeof fn !== 'function') throw new Error(`node-redis has no method ${path}`);
  return fn.bind(cluster[family]);
}

function send({ key, args, readonly }) {
  return cluster.sendCommand(key, Boolean(readonly), args.map(String));
}

// Every command of a batch at once; each settles on its own.
async function batch(commands) {
  const settled = await Promise.allSettled(commands.map(send));
  return settled.map((s) => (s.status === 'fulfilled' ? s.value : { error: s.reason.message }));
}

const handlers = {
  typed: (r) => method(r.method)(...r.args),
  call: (r) => send(r),
  batch: (r) => batch(r.commands),
  multi: async (r) => {
    const multi = cluster.multi(r.commands[0].key);
    for (const c of r.commands) multi.addCommand(c.key, Boolean(c.readonly), c.args.map(String));
    return multi.exec();
  },
  bench: (r) => timeRequests(() => send(r), r.count),
  // The same requests through a plain client to one node, for comparison.
  bench_direct: async (r) => {
    const [h, p] = r.address.split(':');
    const client = createClient({ socket: { host: h, port: Number(p), reconnectStrategy: false } });
    await client.connect();
    try {
      return await timeRequests(() => client.sendCommand(r.args.map(String)), r.count);
    } finally {
      await client.close();
    }
  },
};

// Requests wait in stdin's pipe until the slot map is read.
cluster.connect().then(() => serve(handlers, async () => cluster.close()), (err) => {
  process.stderr.write(`connect failed: ${err.message}\n`);
  process.exit(2);
});
