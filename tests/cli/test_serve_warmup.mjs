// `troupe serve --warmup-requests N`: the server sends itself N streamed requests once the
// engine is ready, and /health answers 503 until they have all finished; `troupe health
// --wait` (the systemd units' readiness check) returns once /health is 200.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { makeTinyModel, startServer, binary } from '../gateway/server_process.mjs';

let modelDir;
const servers = [];

before(() => { modelDir = makeTinyModel(); });
after(async () => { for (const s of servers) await s.stop(); });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function sample(metrics, name, labels = '') {
  const m = metrics.match(new RegExp(`^${name}${labels.replace(/[{}/.]/g, '\\$&')} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : undefined;
}

test('/health is 503 while the warm-up runs and 200 once every warm-up request finished', async () => {
  const n = 8;
  const server = await startServer(modelDir, ['--warmup-requests', String(n), '--max-num-seqs', '8']);
  servers.push(server);
  const check = spawn(binary, ['health', '--url', server.baseURL, '--wait', '60'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const checked = new Promise((resolve) => check.on('exit', (code) => resolve({ code, at: Date.now() })));
  const seen = [];
  let metrics;
  for (const deadline = Date.now() + 60000; ;) {
    const r = await fetch(server.baseURL + '/health');
    const body = await r.text();
    if (r.status === 200) {
      metrics = await (await fetch(server.baseURL + '/metrics')).text();
      break;
    }
    assert.equal(r.status, 503);
    seen.push(JSON.parse(body).error.message);
    assert.ok(Date.now() < deadline, `not ready after 60 s: ${seen.at(-1)}`);
    await sleep(10);
  }
  const readyAt = Date.now();
  assert.ok(seen.some((m) => /^warming up: \d+ of 8 warm-up requests running$/.test(m)), seen.join('\n'));
  // At the first 200, every warm-up request had finished: request i streamed 8 (i + 1)
  // tokens through the chat endpoint, all answered 200.
  assert.equal(sample(metrics, 'troupe_requests_total', '{endpoint="/v1/chat/completions",status="200"}'), n);
  assert.equal(sample(metrics, 'troupe_generation_tokens_total'), (8 * n * (n + 1)) / 2);
  const { code, at } = await checked;
  assert.equal(code, 0);
  assert.ok(at >= readyAt - 1000, 'troupe health --wait returned before /health was 200');
  assert.match(server.stderr(), /troupe: warm-up: 8 requests in \d+\.\d+ s; \/health is ready/);
  assert.doesNotMatch(server.stderr(), /warm-up request failed/);
});

test('the warm-up carries the API key when the server has one', async () => {
  const server = await startServer(modelDir, ['--warmup-requests', '2', '--api-key', 'sk-warm']);
  servers.push(server);
  const r = spawnSync(binary, ['health', '--url', server.baseURL, '--wait', '30'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  await sleep(50);
  assert.match(server.stderr(), /warm-up: 2 requests in/);
  assert.doesNotMatch(server.stderr(), /warm-up request failed/);
});

test('troupe health: 1 with the reason when nothing answers, 2 for a bad flag (of serve too)', () => {
  const down = spawnSync(binary, ['health', '--url', 'http://127.0.0.1:1', '--wait', '0.6'], { encoding: 'utf8' });
  assert.equal(down.status, 1);
  assert.match(down.stderr, /^troupe health: http:\/\/127\.0\.0\.1:1\/health is not ready: /);
  const bad = spawnSync(binary, ['health', '--wiat', '3'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  const negative = spawnSync(binary, ['serve', '--model', modelDir, '--warmup-requests', '-1'], { encoding: 'utf8' });
  assert.equal(negative.status, 2);
  assert.match(negative.stderr, /--warmup-requests must be 0 or more/);
  const batches = spawnSync(binary, ['serve', '--model', modelDir, '--pipeline-micro-batches', '-1'], { encoding: 'utf8' });
  assert.equal(batches.status, 2);
  assert.match(batches.stderr, /--pipeline-micro-batches must be 0 or more/);
});
