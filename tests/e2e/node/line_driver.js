// The loop both cluster client scripts share: one JSON request a line on
// stdin, one JSON answer a line on stdout, in order, so the python test
// (tests/e2e/node_clients.py) drives an already-connected client step by
// step. An answer is {"ok": reply} or {"error": the client's message}.
'use strict';
const readline = require('readline');

// Replies as JSON: bytes as text, a RESP3 map as an object, a set as a list.
function plain(value) {
  if (Buffer.isBuffer(value)) return value.toString();
  if (value instanceof Error) return { error: value.message };
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [plain(k), plain(v)]));
  if (value instanceof Set) return [...value].map(plain);
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'bigint') return Number(value);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value === undefined ? null : value;
}

// Median and 99th percentile of `count` sequential runs of `run`, in µs.
async function timeRequests(run, count) {
  const took = [];
  for (let i = 0; i < count; i++) {
    const start = process.hrtime.bigint();
    await run(i);
    took.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  took.sort((a, b) => a - b);
  return { count, median_us: took[Math.floor(count / 2)], p99_us: took[Math.floor(count * 0.99)] };
}

// handlers: op name -> async (request) => reply; close: async () => void.
function serve(handlers, close) {
  const lines = readline.createInterface({ input: process.stdin });
  let chain = Promise.resolve();
  const answer = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
  lines.on('line', (line) => {
    chain = chain.then(async () => {
      const request = JSON.parse(line);
      const handler = handlers[request.op];
      if (!handler) return answer({ error: `unknown op ${request.op}` });
      try {
        answer({ ok: plain(await handler(request)) });
      } catch (err) {
        answer({ error: err.message });
      }
    });
  });
  // stdin closed: the test is done with this client.
  lines.on('close', () => {
    chain.then(close).then(() => process.exit(0), () => process.exit(1));
  });
}

module.exports = { plain, serve, timeRequests };
