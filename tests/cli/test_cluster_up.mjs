// `troupe cluster up`: a cluster of three processes on this machine (the head, which runs
// the gateway and the first pipeline stage, and two `troupe node` processes it starts),
// two pipeline stages and two expert groups, activations over UCX (TCP on loopback),
// driven by the official openai SDK. Its greedy tokens are transformers' (the golden
// fixture) and, token for token, those of one `troupe serve` process with the same split. A wrong secret, a node that never comes up, a broken
// file and GPU nodes without a GPU each end `cluster up` with a clear error and a non-zero exit.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binary, startServer } from '../gateway/server_process.mjs';
import { clientOf, fixtureModel, golden, greedy, nodesOf, startCluster, startNodeProcess, threeNodes,
         writeConf } from './cluster_process.mjs';

let work, modelDir, cluster, single;

function conf(name, { nodes, ...options } = {}) {
  return writeConf(join(work, name), modelDir, threeNodes(nodes), options);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'troupe_cluster_'));
  modelDir = fixtureModel();
  cluster = await startCluster(conf('cluster.conf'));
  single = await startServer(modelDir, ['--pipeline-stages', '2', '--expert-groups', '2', '--served-model-name',
                                        'fixture', '--kv-cache-mb', '64']);
});

after(async () => {
  await single?.stop();
  if (cluster) {
    const { code } = await cluster.stop();
    assert.equal(code, 0, 'SIGTERM stops the head cleanly: ' + cluster.stderr());
    assert.deepEqual(nodesOf(join(work, 'cluster.conf')), [], 'the node processes end with the head');
  }
});

test('three processes: the head and the two nodes it started, every stage and expert group ready', async () => {
  assert.equal(nodesOf(join(work, 'cluster.conf')).length, 2);
  assert.equal((await fetch(cluster.baseURL + '/health')).status, 200);
  const metrics = await (await fetch(cluster.baseURL + '/metrics')).text();
  const ready = [...metrics.matchAll(/^troupe_component_ready\{component="([\w/]+)"\} (\d)$/gm)].map((m) => m[1] + ' ' + m[2]);
  assert.deepEqual(ready.sort(), ['main/expert_group_0 1', 'main/expert_group_1 1', 'main/stage_0 1', 'main/stage_1 1']);
});

test('troupe cluster status shows where each part runs and that it is ready', () => {
  const r = spawnSync(binary, ['cluster', 'status', join(work, 'cluster.conf'), '--url', cluster.baseURL],
                      { encoding: 'utf8', timeout: 30000 });
  assert.equal(r.status, 0, r.stderr);
  const rows = Object.fromEntries(r.stdout.split('\n').filter((l) => l.startsWith('main/'))
    .map((l) => { const f = l.trim().split(/\s+/); return [f[0], f.slice(1, 6).join(' ')]; }));
  assert.deepEqual(rows, {
    'main/stage_0': 'head cpu layers 0-1 yes',
    'main/stage_1': 'second cpu layers 2-3 yes',
    'main/expert_group_0': 'second cpu experts 0-7 yes',
    'main/expert_group_1': 'third cpu experts 8-15 yes',
  });
  assert.match(r.stdout, /^main\s+serving\s+1\s+\d+\s+yes\s/m, 'the replica row');
  const gone = spawnSync(binary, ['cluster', 'status', join(work, 'cluster.conf'), '--url', 'http://127.0.0.1:1'],
                         { encoding: 'utf8', timeout: 30000 });
  assert.equal(gone.status, 1);
  assert.match(gone.stderr, /the gateway at http:\/\/127\.0\.0\.1:1 does not answer/);
});

test("greedy decoding gives transformers' tokens (the golden fixture)", async () => {
  const got = await greedy(clientOf(cluster), golden.prompt, golden.greedy.length);
  assert.deepEqual(got.ids, golden.greedy);
});

// Concurrent requests are batched as they arrive, differently by two servers, and a
// sequence's log-probs depend in their last bits on the batch it shares a step with: the
// tokens must be the same, the log-probs the same to within that.
test("concurrent requests give one process's tokens and log-probs", async () => {
  const prompts = Array.from({ length: 12 }, (_, i) =>
    Array.from({ length: 5 + 3 * i }, (_, j) => (i * 37 + j * 11) % 250));
  const [fromCluster, fromSingle] = await Promise.all([clientOf(cluster), clientOf(single)].map(
    (client) => Promise.all(prompts.map((p) => greedy(client, p, 16)))));
  for (let i = 0; i < prompts.length; ++i) {
    assert.deepEqual(fromCluster[i].ids, fromSingle[i].ids, `prompt ${i}`);
    fromCluster[i].logprobs.forEach((lp, j) =>
      assert.ok(Math.abs(lp - fromSingle[i].logprobs[j]) < 1e-4, `prompt ${i} token ${j}: ${lp} against ${fromSingle[i].logprobs[j]}`));
  }
});

test('a node with another secret refuses the head: a clear error, exit 1, no hang', async () => {
  const { child: stranger, port } = await startNodeProcess(conf('other.conf', { secret: 'not-the-secret' }), 'second');
  try {
    const r = spawnSync(binary, ['cluster', 'up', conf('head.conf', { nodes: { second: port } }), '--port', '0'],
                        { encoding: 'utf8', timeout: 90000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /node second: wrong cluster secret/);
    assert.deepEqual(nodesOf(join(work, 'head.conf')), [], 'the nodes it started are gone');
  } finally {
    stranger.kill('SIGTERM');
  }
});

test('a node that never comes up: an error at the startup timeout, exit 1', async () => {
  const port = await new Promise((resolve) => {  // a port nothing listens on
    const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
  const started = Date.now();
  const r = spawnSync(binary, ['cluster', 'up', conf('absent.conf', { nodes: { second: port }, startup: 3 }),
                               '--port', '0'], { encoding: 'utf8', timeout: 90000 });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`node second at 127\\.0\\.0\\.1:${port} did not answer within the startup timeout`));
  assert.ok(Date.now() - started < 30000, 'it gives up at the timeout, not later');
});

test('a malformed cluster.conf: file:line error, exit 2', () => {
  const conf = join(work, 'broken.conf');
  writeFileSync(conf, readFileSync(join(work, 'cluster.conf'), 'utf8').replace('stages = head:0-1, second:2-3',
                                                                             'stages = head:0-1, nowhere:2-3'));
  const r = spawnSync(binary, ['cluster', 'up', conf], { encoding: 'utf8', timeout: 30000 });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /broken\.conf:\d+: .*nowhere/);
});

test('GPU nodes without a GPU to compute on: an error naming the node and its line, exit 1', () => {
  const path = writeConf(join(work, 'gpu.conf'), modelDir, `[node.head]
address = 127.0.0.1
port = 0
devices = cuda:0

[node.second]
address = 127.0.0.1
port = 0
devices = cuda:1

[replica.main]
stages = head:0-1, second:2-3
`);
  const r = spawnSync(binary, ['cluster', 'up', path, '--port', '0'],
                      { encoding: 'utf8', timeout: 90000, env: { ...process.env, CUDA_VISIBLE_DEVICES: '' } });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /node head: .*gpu\.conf:22: node head computes on cuda:0, but (this machine has no CUDA device \(or none visible\)|this build of troupe has no CUDA \(nvcc was not found when it was configured\))/);
  assert.deepEqual(nodesOf(path), [], 'the nodes it started are gone');
});

test('a head killed with SIGKILL takes its node processes with it', async () => {
  const path = conf('killed.conf');
  const doomed = await startCluster(path);
  assert.equal(nodesOf(path).length, 2);
  process.kill(doomed.pid, 'SIGKILL');
  const deadline = Date.now() + 20000;
  while (nodesOf(path).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  const left = nodesOf(path);
  for (const pid of left) process.kill(pid, 'SIGKILL');  // they hold this runner's stderr pipe
  assert.deepEqual(left, [], 'node processes outlived their head');
});
