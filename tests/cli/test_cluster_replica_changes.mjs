// Replicas added and removed at runtime (/admin/replicas, `troupe cluster add|remove`):
// blue runs in the head process, green in a node process, red is a standby of the file
// (start = no). A replica removed under running streams drains: each of its streams ends
// whole, with [DONE] and the tokens of a run without the change, then its parts stop and it
// leaves routing, /admin/status, `troupe cluster status` and /metrics. Added back, it
// serves again; a standby starts and stops the same way; bad changes are refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { binary } from '../gateway/server_process.mjs';
import { fixtureModel, golden, greedy, nodesOf, startCluster, streamsUnderWay, writeConf } from './cluster_process.mjs';

const apiKey = 'admin-and-api-key';
let cluster, client, conf;

before(async () => {
  const work = mkdtempSync(join(tmpdir(), 'troupe_replica_changes_'));
  conf = join(work, 'replicas.conf');
  cluster = await startCluster(writeConf(conf, fixtureModel(), `[node.head]
address = 127.0.0.1
port = 0

[node.second]
address = 127.0.0.1
port = 0

[replica.blue]
stages = head:0-3
experts = head:0-15

[replica.green]
stages = second:0-1, second:2-3
experts = second:0-15

[replica.red]
stages = second:0-3
experts = second:0-15
start = no
`, { gateway: `routing = round_robin\napi_key = ${apiKey}\n` }));
  client = new OpenAI({ baseURL: cluster.baseURL + '/v1', apiKey, maxRetries: 0 });
});

after(async () => {
  const { code } = await cluster.stop();
  assert.equal(code, 0, cluster.stderr());
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const auth = { authorization: `Bearer ${apiKey}` };

async function admin(path, body, { method = body === undefined ? 'GET' : 'POST', headers = auth } = {}) {
  const r = await fetch(cluster.baseURL + path, { method, headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

const listing = async () => Object.fromEntries((await admin('/admin/replicas')).json.replicas.map((r) => [r.name, r]));

// Reads `read()` every 100 ms until `done` holds for it, for up to a minute; returns it.
// `why` says what was still wrong.
async function waitFor(read, done, why) {
  const deadline = Date.now() + 60000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    assert.ok(Date.now() < deadline, `${why(value)}: ${cluster.stderr()}`);
    await sleep(100);
  }
}

// Waits until replica `name` is in `state`, with no error from its last change meanwhile.
const until = (name, state) => waitFor(async () => {
  const r = (await listing())[name];
  if (r.state !== state) assert.equal(r.last_error, '', `replica ${name}: ${r.last_error}`);
  return r;
}, (r) => r.state === state, (r) => `replica ${name} is still ${r.state}`);

// Calls routed to each replica so far, from /metrics.
async function routed() {
  const text = await (await fetch(cluster.baseURL + '/metrics')).text();
  const out = { blue: 0, green: 0, red: 0 };
  for (const m of text.matchAll(/^troupe_replica_requests_total\{replica="(\w+)"\} (\d+)$/gm)) out[m[1]] = Number(m[2]);
  return { ...out, text };
}

// One streamed completion through the SDK, its SSE read whole: the token ids in order, the
// finish reason and the last event; `first` is called once its first token is in.
async function streamed(prompt, maxTokens, first = () => {}) {
  const response = await client.completions.create({ model: 'fixture', prompt, max_tokens: maxTokens, temperature: 0,
    logprobs: 0, return_tokens_as_token_ids: true, ignore_eos: true, stream: true }).asResponse();
  const ids = [];
  let finish = null, last = null, text = '';
  const decoder = new TextDecoder();
  for await (const bytes of response.body) {
    text += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = text.indexOf('\n\n')) >= 0) {
      const event = text.slice(0, end).replace(/^data: /, '');
      text = text.slice(end + 2);
      last = event;
      if (event === '[DONE]') continue;
      for (const c of JSON.parse(event).choices) {
        for (const t of c.logprobs?.tokens ?? []) ids.push(Number(t.slice('token_id:'.length)));
        if (c.finish_reason) finish = c.finish_reason;
      }
      if (ids.length > 0) first();
    }
  }
  return { ids, finish, last };
}

const prompts = Array.from({ length: 6 }, (_, i) => Array.from({ length: 5 + 3 * i }, (_, j) => (i * 31 + j * 7) % 250));
const maxTokens = 160;

function assertWhole(runs, clean) {
  runs.forEach((r, i) => {
    assert.equal(r.last, '[DONE]', `stream ${i} did not end with [DONE]`);
    assert.equal(r.finish, 'length', `stream ${i} ended with ${r.finish}`);
    assert.deepEqual(r.ids, clean[i].ids, `stream ${i}: its tokens differ from the run without changes`);
  });
}

test('a replica removed under running streams drains them whole, then leaves routing, status and metrics', async () => {
  const clean = await Promise.all(prompts.map((p) => streamed(p, maxTokens)));
  const { runs, running } = streamsUnderWay(prompts, (p, onToken) => streamed(p, maxTokens, onToken));
  await running;
  const removing = await admin('/admin/replicas/green/remove', {});
  assert.equal(removing.status, 202, JSON.stringify(removing.json));
  const green = removing.json.replicas.find((r) => r.name === 'green');
  assert.equal(green.state, 'draining');
  assert.ok(green.in_flight > 0, 'green had no stream in flight when it was removed');
  // New calls meanwhile go to blue only.
  const start = await routed();
  const fresh = await Promise.all(Array.from({ length: 4 }, () => greedy(client, golden.prompt, 4)));
  for (const f of fresh) assert.deepEqual(f.ids, golden.greedy.slice(0, 4));
  const now = await routed();
  assert.equal(now.blue - start.blue, 4);
  assert.equal(now.green - start.green, 0, 'a draining replica took a new call');
  assertWhole(await Promise.all(runs), clean);

  await until('green', 'off');
  assert.deepEqual((await admin('/admin/traffic')).json.replicas.map((r) => r.name), ['blue']);
  const status = (await admin('/admin/status')).json;
  assert.deepEqual(status.replicas.map((r) => r.name), ['blue']);
  assert.deepEqual(status.components.map((c) => c.name).filter((n) => !n.startsWith('blue/')), [],
                   'green\'s stages and expert groups are gone');
  const metrics = (await routed()).text;
  assert.doesNotMatch(metrics, /replica="green"/);
  assert.doesNotMatch(metrics, /component="green\//);
  const { stdout } = await promisify(execFile)(binary, ['cluster', 'status', conf, '--url', cluster.baseURL,
                                                        '--api-key', apiKey]);
  assert.match(stdout, /^blue +serving/m);
  assert.doesNotMatch(stdout, /green/);
  assert.match(cluster.stderr(), /replica green is removed\n/);
});

test('a removed replica added back serves again, with the same tokens', async () => {
  const adding = await admin('/admin/replicas/green/add', { weight: 1 });
  assert.equal(adding.status, 202, JSON.stringify(adding.json));
  assert.equal(adding.json.replicas.find((r) => r.name === 'green').state, 'starting');
  await until('green', 'serving');
  assert.equal((await fetch(cluster.baseURL + '/health', { headers: auth })).status, 200);
  const start = await routed();
  const results = await Promise.all(Array.from({ length: 8 }, () => greedy(client, golden.prompt, 6)));
  for (const r of results) assert.deepEqual(r.ids, golden.greedy.slice(0, 6));
  const now = await routed();
  assert.equal(now.blue - start.blue, 4);
  assert.equal(now.green - start.green, 4, 'green takes its share again');
  const status = (await admin('/admin/status')).json;
  assert.ok(status.components.filter((c) => c.name.startsWith('green/')).every((c) => c.ready));
  assert.equal(status.components.filter((c) => c.name.startsWith('green/')).length, 3);
});

test('a standby replica of the file starts with troupe cluster add and stops with troupe cluster remove', async () => {
  assert.equal((await listing()).red.state, 'off');
  const cli = (verb, ...flags) => promisify(execFile)(binary, ['cluster', verb, conf, 'red', '--url', cluster.baseURL,
                                                               '--api-key', apiKey, ...flags]);
  const added = await cli('add', '--weight', '2', '--ramp-s', '0');
  assert.match(added.stdout, /replica red is serving/);
  assert.equal((await listing()).red.weight, 2);
  const start = await routed();
  const results = await Promise.all(Array.from({ length: 8 }, () => greedy(client, golden.prompt, 3)));
  for (const r of results) assert.deepEqual(r.ids, golden.greedy.slice(0, 3));
  const now = await routed();
  assert.ok(Math.abs(now.red - start.red - 4) <= 1, `red took ${now.red - start.red} of 8 with half the weight`);
  const removed = await cli('remove');
  assert.match(removed.stdout, /replica red is removed/);
  assert.equal((await listing()).red.state, 'off');
});

// Node second, where red would run, stopped as a hung host is: the add fails with the
// reason, and red stays out of routing. Once the head has brought second back (it takes
// the stopped process for dead and starts another), the same add works.
test('an add whose node does not answer fails with a clear error, then works once the node is back', async () => {
  const [second] = nodesOf(conf, 'second');
  process.kill(second, 'SIGSTOP');
  let red;
  try {
    assert.equal((await admin('/admin/replicas/red/add', {})).status, 202);
    red = await waitFor(async () => (await listing()).red, (r) => r.state === 'off', (r) => `red is still ${r.state}`);
  } finally {
    try { process.kill(second, 'SIGCONT'); } catch {}  // the head may have ended it already
  }
  assert.match(red.last_error, /^replica red: .*second/);
  assert.match(cluster.stderr(), /replica red did not start: replica red: /);
  assert.deepEqual((await admin('/admin/traffic')).json.replicas.map((r) => r.name).sort(), ['blue', 'green']);

  await waitFor(async () => (await admin('/admin/status')).json.replicas.find((r) => r.name === 'green'),
                (green) => green.healthy, () => 'green is not healthy again');
  assert.equal((await admin('/admin/replicas/red/add', {})).status, 202);
  await until('red', 'serving');
  const results = await Promise.all(Array.from({ length: 6 }, () => greedy(client, golden.prompt, 3)));
  for (const r of results) assert.deepEqual(r.ids, golden.greedy.slice(0, 3));
  assert.equal((await admin('/admin/replicas/red/remove', {})).status, 202);
  await until('red', 'off');
});

// Blue is the file's first replica and runs in the head process: the nodes must not take
// its scheduler's end for the head's.
test('the first replica, in the head process, removed and added back: the node processes stay', async () => {
  const [second] = nodesOf(conf, 'second');
  assert.equal((await admin('/admin/replicas/blue/remove', {})).status, 202);
  await until('blue', 'off');
  const results = await Promise.all(Array.from({ length: 4 }, () => greedy(client, golden.prompt, 4)));
  for (const r of results) assert.deepEqual(r.ids, golden.greedy.slice(0, 4));
  assert.deepEqual(nodesOf(conf, 'second'), [second], 'node second ended or was restarted');
  assert.equal((await admin('/admin/replicas/blue/add', {})).status, 202);
  await until('blue', 'serving');
  const start = await routed();
  await Promise.all(Array.from({ length: 4 }, () => greedy(client, golden.prompt, 2)));
  assert.equal((await routed()).blue - start.blue, 2);
});

test('bad replica changes are refused with clear errors and change nothing', async () => {
  const before = await listing();
  const refused = [
    ['/admin/replicas/purple/remove', {}, 404, /no replica purple/],
    ['/admin/replicas/purple/add', {}, 404, /no replica purple/],
    ['/admin/replicas/green/add', {}, 409, /already serving/],
    ['/admin/replicas/red/remove', {}, 409, /red is off/],
    ['/admin/replicas/green/add', { weight: -1 }, 400, /weight must be a number/],
    ['/admin/replicas/green/add', { colour: 'red' }, 400, /unknown field colour/],
    ['/admin/replicas/green/add', 'not json', 400, /not valid JSON/],
    ['/admin/replicas/green/remove', { weight: 0 }, 400, /a remove takes none/],
    ['/admin/replicas/green/explode', {}, 404, /no endpoint/],
  ];
  for (const [path, body, status, message] of refused) {
    const r = await admin(path, body);
    assert.equal(r.status, status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.json)}`);
    assert.match(r.json.error.message, message);
  }
  assert.equal((await admin('/admin/replicas/green/remove', undefined, { method: 'GET' })).status, 405);
  assert.equal((await admin('/admin/replicas/green/remove', {}, { headers: {} })).status, 401, 'no API key');
  // The last replica with a weight above 0 stays.
  assert.equal((await admin('/admin/traffic', { weights: { green: 0 } })).status, 200);
  const last = await admin('/admin/replicas/blue/remove', {});
  assert.equal(last.status, 409);
  assert.match(last.json.error.message, /last serving replica/);
  assert.equal((await admin('/admin/traffic', { weights: { green: 1 } })).status, 200);
  assert.deepEqual(await listing(), before);
});
