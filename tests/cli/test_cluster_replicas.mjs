// Two replicas behind one gateway (`troupe cluster up`): blue in the head process, green
// in a node process. Routing follows the weights, /admin/traffic moves them at runtime
// (green takes over; blue drains), a session (the `user` field) keeps its replica, and both
// replicas give the same greedy tokens, transformers' (the golden fixture). Node second's
// process is the test's own (the head reaches it at its port), so that the head does not
// start it again when the test kills it: a dead replica stays dead.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientOf, fixtureModel, golden, greedy, startCluster, startNodeProcess, writeConf } from './cluster_process.mjs';

let cluster, client, node;

before(async () => {
  const work = mkdtempSync(join(tmpdir(), 'troupe_replicas_'));
  const model = fixtureModel();
  const body = (port) => `[node.head]
address = 127.0.0.1
port = 0

[node.second]
address = 127.0.0.1
port = ${port}

[replica.blue]
stages = head:0-3
experts = head:0-15
weight = 1

[replica.green]
stages = second:0-1, second:2-3
experts = second:0-15
weight = 0
`;
  const started = await startNodeProcess(writeConf(join(work, 'node.conf'), model, body(0),
                                                  { gateway: 'routing = least_load' }), 'second');
  node = started.child;
  const port = started.port;
  cluster = await startCluster(writeConf(join(work, 'replicas.conf'), model, body(port),
                                         { gateway: 'routing = least_load' }));
  client = clientOf(cluster);
});

after(async () => {
  node?.kill('SIGKILL');
  const { code } = await cluster.stop();
  assert.equal(code, 0, cluster.stderr());
});

// Calls routed to each replica so far, from /metrics.
async function routed() {
  const text = await (await fetch(cluster.baseURL + '/metrics')).text();
  const out = { blue: 0, green: 0 };
  for (const m of text.matchAll(/^troupe_replica_requests_total\{replica="(\w+)"\} (\d+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

async function traffic(body) {
  const r = await fetch(cluster.baseURL + '/admin/traffic', body === undefined ? {} : {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

test('requests follow the weights, and /admin/traffic moves them at runtime', async () => {
  const start = await routed();
  const blue = await Promise.all(Array.from({ length: 6 }, () => greedy(client, golden.prompt, 8)));
  let now = await routed();
  assert.equal(now.blue - start.blue, 6);
  assert.equal(now.green - start.green, 0, 'green has weight 0');

  const moved = await traffic({ weights: { blue: 0, green: 1 } });
  assert.equal(moved.status, 200);
  assert.deepEqual(moved.json.replicas.map((r) => [r.name, r.weight]), [['blue', 0], ['green', 1]]);
  const green = await Promise.all(Array.from({ length: 6 }, () => greedy(client, golden.prompt, 8)));
  const after = await routed();
  assert.equal(after.green - now.green, 6);
  assert.equal(after.blue - now.blue, 0, 'blue is drained');
  // The same tokens; the log-probs to within what batching six calls differently changes.
  for (const [g, b] of green.map((g, i) => [g, blue[i]])) {
    assert.deepEqual(g.ids, golden.greedy.slice(0, 8));
    assert.deepEqual(b.ids, golden.greedy.slice(0, 8));
    g.logprobs.forEach((lp, j) => assert.ok(Math.abs(lp - b.logprobs[j]) < 1e-4, `${lp} against ${b.logprobs[j]}`));
  }
});

test('a session keeps its replica while both take traffic', async () => {
  assert.equal((await traffic({ weights: { blue: 1, green: 1 } })).status, 200);
  const start = await routed();
  for (let i = 0; i < 8; ++i) await greedy(client, [5 + i, 6, 7], 2, { user: 'alice' });
  const now = await routed();
  const counts = [now.blue - start.blue, now.green - start.green].sort();
  assert.deepEqual(counts, [0, 8], 'alice stayed on one replica');
});

test('bad traffic requests are refused and change nothing', async () => {
  const before = (await traffic()).json;
  for (const body of [{ weights: { red: 1 } }, { weights: { blue: -1 } }, { weights: { blue: 0, green: 0 } },
                      { weights: {} }, { weights: { blue: 1 }, ramp_s: -3 }, { weight: { blue: 1 } }]) {
    const r = await traffic(body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.ok(r.json.error.message.length > 0);
  }
  assert.deepEqual((await traffic()).json, before);
});

test('a ramp moves the weights gradually', async () => {
  assert.equal((await traffic({ weights: { blue: 0, green: 1 }, ramp_s: 600 })).status, 200);
  const [blue, green] = (await traffic()).json.replicas;
  assert.ok(blue.weight < 1 && blue.weight > 0.9, `blue ${blue.weight} has only begun to fall`);
  assert.ok(green.weight > 0.99 && green.weight < 1.1, `green ${green.weight}`);
});

test('calls in flight finish on the replica drained under them', async () => {
  assert.equal((await traffic({ weights: { blue: 1, green: 0 } })).status, 200);
  const start = await routed();
  const long = Array.from({ length: 4 }, (_, i) => greedy(client, [20 + i, 3, 3], 200));
  for (let i = 0; i < 100; ++i) {  // until all four run on blue
    if ((await traffic()).json.replicas[0].in_flight === 4) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal((await traffic({ weights: { blue: 0, green: 1 } })).status, 200);
  const fresh = await greedy(client, golden.prompt, 4);
  const done = await Promise.all(long);
  for (const d of done) assert.equal(d.ids.length, 200, 'a drained call was cut short');
  assert.deepEqual(fresh.ids, golden.greedy.slice(0, 4));
  const now = await routed();
  assert.equal(now.blue - start.blue, 4);
  assert.equal(now.green - start.green, 1);
});

test("a replica whose node process dies is seen as down and skipped", async () => {
  assert.equal((await traffic({ weights: { blue: 1, green: 1 } })).status, 200);
  node.kill('SIGKILL');
  const deadline = Date.now() + 15000;
  let green;
  do {
    await new Promise((r) => setTimeout(r, 200));
    green = (await traffic()).json.replicas.find((r) => r.name === 'green');
  } while (green.healthy && Date.now() < deadline);
  assert.equal(green.healthy, false, 'the gateway still routes to the dead replica');
  const start = await routed();
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => greedy(client, [9 + i, 4, 2], 4)));
  assert.equal(results.length, 8);
  const now = await routed();
  assert.equal(now.blue - start.blue, 8);
  assert.equal(now.green - start.green, 0);
  assert.equal((await fetch(cluster.baseURL + '/health')).status, 200, 'blue still serves');
});
