// What a stranger can send, against `troupe serve` on port 0: every input class that once
// crashed or hung the gateway (wrong JSON types at every nesting level, 100k-deep
// nesting, huge numbers, invalid UTF-8 and lone surrogates, a 50 MB body, fan-out past the
// pending limit, too many stop strings, logit_bias outside the vocabulary) is answered with
// a 4xx naming the problem, /health stays 200, and a valid request is served after each.
// Then the gateway drill kills the gateway actor under streaming load: every stream ends
// with its tokens or an error event, and new requests are served within a second.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { spawnSync } from 'node:child_process';
import { binary, makeTinyModel, startServer } from './server_process.mjs';
import { sendGatewayDrill, sendGatewayHangDrill } from './gateway_drill.mjs';

let server;

before(async () => { server = await startServer(makeTinyModel()); });
after(async () => { await server?.stop(); });

// One raw HTTP exchange; the body as bytes, so that invalid UTF-8 goes out as it is.
function post(path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
    const req = request({ host: '127.0.0.1', port: server.port, path, method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': bytes.length, ...headers } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text, headers: res.headers }));
    });
    req.setTimeout(20000, () => req.destroy(new Error(`no answer to ${path} within 20 s`)));
    req.on('error', reject);
    req.end(bytes);
  });
}

async function get(path) {
  const res = await fetch(server.baseURL + path, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, text: await res.text() };
}

const valid = {
  model: 'tiny',
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'ok' },
  ],
  tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'integer' } } } } }],
  tool_choice: 'auto',
  max_tokens: 2,
  temperature: 0.5,
  stop: ['x'],
  stop_token_ids: [1],
  logit_bias: { 5: 1 },
  stream_options: { include_usage: true },
  response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'object', properties: { a: { type: 'string' } } } } },
  chat_template_kwargs: { enable_thinking: false },
};

// Every place in `value`, as a path of keys and indices.
function paths(value, prefix = []) {
  if (value === null || typeof value !== 'object') return [prefix];
  const inner = Object.entries(value).flatMap(([k, v]) => paths(v, [...prefix, Array.isArray(value) ? Number(k) : k]));
  return [prefix, ...inner];
}

function replaced(value, path, by) {
  if (path.length === 0) return by;
  const copy = Array.isArray(value) ? [...value] : { ...value };
  copy[path[0]] = replaced(value[path[0]], path.slice(1), by);
  return copy;
}

async function assertServes() {
  const res = await post('/v1/chat/completions', JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }));
  assert.equal(res.status, 200, res.text);
  assert.equal((await get('/health')).status, 200);
}

test('a wrong JSON type anywhere in a chat request is a clean answer, never a dead gateway', async () => {
  assert.equal((await post('/v1/chat/completions', JSON.stringify(valid))).status, 200);
  const wrong = [0, 1e300, -1, 'text', null, true, [], {}, [1, 'a'], { type: 5 }];
  let answered = 0;
  for (const path of paths(valid).filter((p) => p.length > 0)) {
    for (const by of wrong) {
      const res = await post('/v1/chat/completions', JSON.stringify(replaced(valid, path, by)));
      assert.ok(res.status === 200 || (res.status >= 400 && res.status < 500),
                `${JSON.stringify(path)} = ${JSON.stringify(by)}: ${res.status} ${res.text}`);
      if (res.status !== 200) assert.ok(JSON.parse(res.text).error.message.length > 0);
      answered++;
    }
  }
  assert.ok(answered > 300);
  await assertServes();
});

test('deep nesting, huge numbers, broken text and a 50 MB body are refused cleanly', async () => {
  const deep = '{"model":"tiny","messages":' + '['.repeat(100000) + ']'.repeat(100000) + '}';
  const cases = [
    ['/v1/chat/completions', deep, 400, /nests more than 64 levels/],
    ['/v1/completions', '{"model":"tiny","prompt":' + '{"a":'.repeat(100000) + '1' + '}'.repeat(100000) + '}', 400, /nests more than 64/],
    ['/tokenize', '[' .repeat(70) + ']'.repeat(70), 400, /nests more than 64/],
    ['/v1/completions', '{"model":"tiny","prompt":[4294967301],"max_tokens":2}', 400, /outside the vocabulary/],
    ['/v1/completions', '{"model":"tiny","prompt":[18446744073709551615],"max_tokens":2}', 400, /token ids/],
    ['/v1/completions', '{"model":"tiny","prompt":"hi","max_tokens":1e400}', 400, /not valid JSON/],
    ['/v1/completions', '{"model":"tiny","prompt":"hi","max_tokens":4294967298}', 400, /max_tokens/],
    ['/v1/chat/completions', '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":4294967296}', 400, /top_logprobs/],
    ['/v1/chat/completions', Buffer.from('{"model":"tiny","messages":[{"role":"user","content":"\xff\xfe"}]}', 'latin1'), 400, /not valid JSON/],
    ['/v1/chat/completions', '{"model":"tiny","messages":[{"role":"user","content":"\\ud800"}]}', 400, /not valid JSON/],
    ['/v1/completions', '{"model":"tiny","prompt":"hi","stop":' + JSON.stringify(Array(10000).fill('a')) + '}', 400, /stop has 10000 strings/],
    ['/v1/completions', '{"model":"tiny","prompt":"hi","logit_bias":{"99999999":5}}', 400, /outside the vocabulary/],
    ['/v1/completions', '{"model":"tiny","prompt":"hi","logit_bias":{"5":500}}', 400, /from -100 to 100/],
    ['/v1/completions', JSON.stringify({ model: 'tiny', prompt: Array(5000).fill('a'), n: 128 }), 400, /640000 sequences/],
    ['/detokenize', '{"model":"tiny","tokens":[-1]}', 400, /outside the vocabulary/],
  ];
  for (const [path, body, status, message] of cases) {
    const res = await post(path, body);
    assert.equal(res.status, status, `${path} ${String(body).slice(0, 80)}: ${res.text}`);
    assert.match(JSON.parse(res.text).error.message, message);
    await assertServes();
  }
  const big = await post('/v1/completions', Buffer.alloc(50 << 20, 0x20));
  assert.equal(big.status, 413);
  await assertServes();
});

test('the API key: the scheme in any case, a wrong key refused, unknown paths counted as one route', async () => {
  const keyed = await startServer(makeTinyModel(), ['--api-key', 'sk-right']);
  try {
    const body = JSON.stringify({ model: 'tiny', prompt: 'hi', max_tokens: 1 });
    const call = (auth, path = '/v1/completions') =>
      fetch(keyed.baseURL + path, { method: 'POST', body, headers: { authorization: auth, 'content-type': 'application/json' } });
    assert.equal((await call('Bearer sk-right')).status, 200);
    assert.equal((await call('bearer sk-right')).status, 200);
    assert.equal((await call('BEARER   sk-right')).status, 200);
    assert.equal((await call('Bearer sk-righ')).status, 401);
    assert.equal((await call('Bearer sk-right2')).status, 401);
    assert.equal((await call('Basic sk-right')).status, 401);
    for (let i = 0; i < 50; i++) assert.equal((await call('Bearer no', `/v1/unknown-${i}`)).status, 401);
    const metrics = await (await fetch(keyed.baseURL + '/metrics')).text();
    assert.doesNotMatch(metrics, /unknown-/);
    assert.match(metrics, /troupe_requests_total\{endpoint="other",status="401"\} 50/);
  } finally {
    await keyed.stop();
  }
});

test('an admin key of its own guards /admin; --protect-metrics puts /metrics behind a key; probes stay open', async () => {
  const keyed = await startServer(makeTinyModel(), ['--api-key', 'sk-api', '--admin-key', 'sk-admin', '--protect-metrics',
                                                    '--enforce-eager']);
  try {
    const get = (path, key) => fetch(keyed.baseURL + path, key ? { headers: { authorization: `Bearer ${key}` } } : {});
    assert.equal((await get('/admin/status', 'sk-api')).status, 401, 'the API key opened /admin');
    assert.equal((await get('/admin/status')).status, 401);
    assert.equal((await get('/admin/status', 'sk-admin')).status, 200);
    assert.equal((await get('/v1/models', 'sk-admin')).status, 401, 'the admin key is not an API key');
    assert.equal((await get('/v1/models', 'sk-api')).status, 200);
    assert.equal((await get('/metrics')).status, 401);
    assert.equal((await get('/metrics', 'sk-wrong')).status, 401);
    assert.equal((await get('/metrics', 'sk-api')).status, 200);
    const metrics = await get('/metrics', 'sk-admin');
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /troupe_requests_total\{endpoint="\/metrics",status="401"\} 2/);
    let health = 0;
    for (let i = 0; i < 100 && health !== 200; ++i) {  // 503 until the stages are ready, then 200, without a key
      health = (await get('/health')).status;
      if (health !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(health, 200);
    assert.equal((await get('/version')).status, 200);
  } finally {
    await keyed.stop();
  }
  const r = spawnSync(binary, ['serve', '--model', makeTinyModel(), '--port', '0', '--protect-metrics'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--protect-metrics needs --api-key or --admin-key/);
});

test('a 429 says when to retry', async () => {
  const small = await startServer(makeTinyModel(), ['--max-pending', '2']);
  try {
    const stream = (n) => fetch(small.baseURL + '/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', prompt: 'hi', n, max_tokens: 400, ignore_eos: true, stream: true }) });
    const first = await stream(2);
    assert.equal(first.status, 200);
    const refused = await stream(1);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    await first.body.cancel();
  } finally {
    await small.stop();
  }
});

test('the gateway killed under streaming load: streams end whole or with an error event, new requests served within a second', async () => {
  const streams = Array.from({ length: 8 }, () => post('/v1/completions',
    JSON.stringify({ model: 'tiny', prompt: 'hi', max_tokens: 2000, ignore_eos: true, stream: true })));
  await new Promise((r) => setTimeout(r, 300));
  sendGatewayDrill(server.pid);
  const killedAt = Date.now();
  let servedAt = 0;
  while (!servedAt && Date.now() - killedAt < 5000) {
    const res = await post('/v1/completions', JSON.stringify({ model: 'tiny', prompt: 'hi', max_tokens: 1 }));
    if (res.status === 200) servedAt = Date.now();
    else assert.equal(res.status, 503, res.text);
  }
  assert.ok(servedAt && servedAt - killedAt < 1000, `served ${servedAt - killedAt} ms after the drill`);
  for (const s of await Promise.all(streams)) {
    assert.equal(s.status, 200);
    assert.match(s.text, /data: \[DONE\]\n\n$/);
    const events = s.text.split('\n\n').filter((e) => e.startsWith('data: {'));
    const last = JSON.parse(events.at(-1).slice(6));
    assert.ok(last.error?.type === 'service_unavailable' || last.choices?.[0]?.finish_reason === 'length', events.at(-1));
  }
  assert.match(server.stderr(), /the gateway was restarted by its supervisor/);
  await assertServes();
});

// Parsing and tokenizing take time in proportion to a request: they run on the gateway's
// preparer threads, so the gateway actor answers /v1/models (and streams tokens) while
// three 30 MB prompts are tokenized (about a second each here; it used to answer nothing
// meanwhile).
test('30 MB prompts are tokenized off the gateway: /v1/models answers meanwhile', async () => {
  const words = 'the quick brown fox jumps over a lazy dog 12345 ';
  const prompt = words.repeat(Math.floor((30 << 20) / words.length));
  let pending = 3;
  const big = Array.from({ length: 3 }, () => post('/tokenize', JSON.stringify({ model: 'tiny', prompt })).then((r) => {
    pending -= 1;
    return r;
  }));
  await new Promise((r) => setTimeout(r, 300));  // their bodies are in
  const latencies = [];
  while (pending > 0 && latencies.length < 200) {
    const start = Date.now();
    const res = await get('/v1/models');
    assert.equal(res.status, 200, res.text);
    if (pending > 0) latencies.push(Date.now() - start);
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const r of await Promise.all(big)) {
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.ok(JSON.parse(r.text).count > 1000000);
  }
  assert.ok(latencies.length >= 3, `the prompts were tokenized before /v1/models was asked 3 times (${latencies})`);
  assert.ok(Math.max(...latencies) < 1000, `/v1/models waited ${Math.max(...latencies)} ms behind the prompts (${latencies})`);
});

// A gateway whose thread is stuck answers nothing, /health included: the HTTP server then
// answers /health itself, 503 with the reason, once the gateway has missed five ticks, and
// the gateway is healthy again once its thread is free.
test('a hung gateway: /health says so from the HTTP server within 6 s, and is 200 once it runs again', async () => {
  const health = async () => {
    const r = await fetch(server.baseURL + '/health', { signal: AbortSignal.timeout(2000) }).catch(() => null);
    return r ? { status: r.status, text: await r.text() } : { status: 0, text: 'no answer within 2 s' };
  };
  let h = await health();
  for (let i = 0; i < 100 && h.status !== 200; ++i) h = await health();
  assert.equal(h.status, 200, h.text);
  const hungAt = Date.now();
  sendGatewayHangDrill(server.pid, 9000);
  let seen;
  while (Date.now() - hungAt < 8500) {
    h = await health();
    if (h.status === 503) {
      seen = { after: Date.now() - hungAt, text: h.text };
      break;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(seen, `/health never said the gateway hung: ${h.status} ${h.text}`);
  assert.ok(seen.after < 7000, `noticed after ${seen.after} ms`);
  assert.match(seen.text, /the gateway has not answered for \d+\.\d s/);
  const deadline = Date.now() + 10000;
  for (h = await health(); h.status !== 200 && Date.now() < deadline; h = await health())
    await new Promise((r) => setTimeout(r, 100));
  assert.equal(h.status, 200, `not healthy again once the gateway ran: ${h.text}`);
});
