// The OpenAI HTTP API as the official `openai` SDK sees it, against a real troupe server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { makeTinyModel, startServer, generateGreedy } from './server_process.mjs';

let modelDir, server, client;

before(async () => {
  modelDir = makeTinyModel();
  server = await startServer(modelDir, ['--max-num-seqs', '32']);
  client = new OpenAI({ baseURL: server.baseURL + '/v1', apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'SIGTERM stops the server cleanly');
});

// Token ids of a completion, through vLLM's return_tokens_as_token_ids.
function idsOf(choice) {
  return choice.logprobs.tokens.map((t) => Number(t.slice('token_id:'.length)));
}

async function greedyIds(prompt, maxTokens) {
  const r = await client.completions.create({ model: 'tiny', prompt, max_tokens: maxTokens, temperature: 0,
    logprobs: 0, return_tokens_as_token_ids: true });
  return idsOf(r.choices[0]);
}

test('lists the served model, and retrieves it by id', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['tiny']);
  const tiny = await client.models.retrieve('tiny');
  assert.equal(tiny.id, 'tiny');
  assert.equal(tiny.object, 'model');
  await assert.rejects(client.models.retrieve('org/other'), (e) => e.status === 404 &&
    e.code === 'model_not_found' && e.type === 'invalid_request_error' && e.message.includes('`org/other`'));
});

test('completion: text prompt, usage and finish reason', async () => {
  const tok = await (await fetch(server.baseURL + '/tokenize', { method: 'POST',
    body: JSON.stringify({ model: 'tiny', prompt: 'The quick brown fox' }) })).json();
  const r = await client.completions.create({ model: 'tiny', prompt: 'The quick brown fox', max_tokens: 7,
    ignore_eos: true, seed: 1 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.prompt_tokens, tok.count);
  assert.equal(r.usage.completion_tokens, 7);
  assert.equal(r.usage.total_tokens, tok.count + 7);
  assert.equal(typeof r.choices[0].text, 'string');
});

test('greedy output through the API equals the engine run directly, alone and in a batch of 16', async () => {
  const prompt = [9707, 11, 1879, 13, 576, 3974];
  const direct = generateGreedy(modelDir, prompt, 12);
  const alone = await greedyIds(prompt, 12);
  assert.deepEqual(alone, direct.slice(0, alone.length));
  assert.ok(alone.length === 12 || alone.length === direct.length);
  const others = Array.from({ length: 15 }, (_, i) => greedyIds([100 + i, 200 + i * 3, 5, 7 + i], 12));
  const [inBatch] = await Promise.all([greedyIds(prompt, 12), ...others]);
  assert.deepEqual(inBatch, alone);
});

test('streamed completion concatenates to the non-streamed one, with usage last', async () => {
  const args = { model: 'tiny', prompt: [1, 2, 3, 4], max_tokens: 10, temperature: 0, ignore_eos: true };
  const whole = await client.completions.create(args);
  const stream = await client.completions.create({ ...args, stream: true, stream_options: { include_usage: true } });
  let text = '', usage = null, finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) { text += c.text; if (c.finish_reason) finish = c.finish_reason; }
  }
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 10);
});

test('chat: create, stream, and the SDK stream helper agree', async () => {
  const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Say hello in French.' }];
  const args = { model: 'tiny', messages, max_tokens: 8, temperature: 0 };
  const whole = await client.chat.completions.create(args);
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.ok(['length', 'stop'].includes(whole.choices[0].finish_reason));

  let streamed = '';
  for await (const chunk of await client.chat.completions.create({ ...args, stream: true }))
    streamed += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(streamed, whole.choices[0].message.content);

  const helper = client.chat.completions.stream(args);
  const final = await helper.finalChatCompletion();
  assert.equal(final.choices[0].message.content, whole.choices[0].message.content);
});

// Unforced, the random-weight model calls no tools: the parsing itself is covered by the
// C++ tests (test_generation_call), forced calls by test_structured_outputs.mjs; here the
// API accepts the tool fields and checks their shape.
test('chat with tools: tool_choice and parallel_tool_calls accepted, malformed ones 400', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] } } }];
  const base = { model: 'tiny', messages: [{ role: 'user', content: 'Weather in Paris?' }], max_tokens: 4, tools };
  for (const extra of [{}, { tool_choice: 'auto' }, { tool_choice: 'none' }, { tool_choice: 'required' },
    { tool_choice: { type: 'function', function: { name: 'get_weather' } } }, { parallel_tool_calls: false }]) {
    const r = await client.chat.completions.create({ ...base, ...extra });
    assert.equal(r.choices[0].message.role, 'assistant', JSON.stringify(extra));
    assert.ok(['length', 'stop', 'tool_calls'].includes(r.choices[0].finish_reason));
  }
  const final = await client.chat.completions.stream({ ...base, tool_choice: 'auto', parallel_tool_calls: true })
    .finalChatCompletion();
  assert.equal(final.choices[0].message.role, 'assistant');
  for (const [extra, param] of [[{ tool_choice: 'sometimes' }, 'tool_choice'],
    [{ tool_choice: { type: 'function', function: { name: 'launch_rocket' } } }, 'tool_choice'],
    [{ tool_choice: { type: 'function' } }, 'tool_choice'],
    [{ tools: undefined, tool_choice: 'required' }, 'tool_choice'],
    [{ parallel_tool_calls: 'yes' }, 'parallel_tool_calls'],
    [{ tools: [{ type: 'function', function: {} }] }, 'tools[0]']]) {
    await assert.rejects(client.chat.completions.create({ ...base, ...extra }),
      (e) => e.status === 400 && e.param === param, JSON.stringify(extra));
  }
});

test('tool_choice short forms act as the OpenAI forms they stand for', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const reply = async (toolChoice) => {
    const r = await client.chat.completions.create({ model: 'tiny', tools, tool_choice: toolChoice, temperature: 0,
      max_tokens: 24, messages: [{ role: 'user', content: 'Weather in Paris?' }] });
    const m = r.choices[0].message;
    return { content: m.content, calls: (m.tool_calls ?? []).map((c) => c.function), finish: r.choices[0].finish_reason };
  };
  const named = { type: 'function', function: { name: 'get_weather' } };
  for (const [short, openai] of [[{ type: 'auto' }, 'auto'], [{ type: 'none' }, 'none'],
    [{ type: 'required' }, 'required'], [{ name: 'get_weather' }, named],
    [{ type: 'function', name: 'get_weather' }, named]]) {
    assert.deepEqual(await reply(short), await reply(openai), JSON.stringify(short));
  }
  assert.notDeepEqual(await reply({ type: 'required' }), await reply({ type: 'none' }), 'a forced call is constrained');
});

test('developer messages are system ones; an assistant turn\'s reasoning is its reasoning_content', async () => {
  const ids = async (messages) => (await (await fetch(server.baseURL + '/tokenize', { method: 'POST',
    body: JSON.stringify({ model: 'tiny', messages }) })).json()).tokens;
  const user = { role: 'user', content: 'Hi' };
  const developer = await ids([{ role: 'developer', content: 'Be terse.' }, user]);
  assert.deepEqual(developer, await ids([{ role: 'system', content: 'Be terse.' }, user]));
  assert.notDeepEqual(developer, await ids([user]));
  const answered = (extra) => ids([user, { role: 'assistant', content: 'Hello.', ...extra }]);
  const reasoning = await answered({ reasoning: 'greet back' });
  assert.deepEqual(reasoning, await answered({ reasoning_content: 'greet back' }));
  assert.notDeepEqual(reasoning, await answered({}));
});

test('logit_bias: +100 forces a token, -100 bans one, bad entries are 400', async () => {
  const base = { model: 'tiny', prompt: [9707, 11, 1879], max_tokens: 4, temperature: 0, logprobs: 0,
    return_tokens_as_token_ids: true, ignore_eos: true };
  const ids = async (extra) => idsOf((await client.completions.create({ ...base, ...extra })).choices[0]);
  const plain = await ids({});
  assert.deepEqual(await ids({ logit_bias: { 4321: 100 } }), [4321, 4321, 4321, 4321]);
  const banned = await ids({ logit_bias: { [plain[0]]: -100 } });
  assert.notEqual(banned[0], plain[0]);
  for (const bias of [{ 999999999: 1 }, { 5: 101 }, { '05': 1 }, { x: 1 }]) {
    await assert.rejects(client.completions.create({ ...base, logit_bias: bias }),
      (e) => e.status === 400 && e.param === 'logit_bias', JSON.stringify(bias));
  }
});

test('chat log-probs in OpenAI format', async () => {
  const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 4, logprobs: true, top_logprobs: 3, ignore_eos: true });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 4);
  for (const entry of content) {
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 3);
    assert.ok(entry.top_logprobs[0].logprob >= entry.top_logprobs[2].logprob);
    assert.ok(Array.isArray(entry.bytes));
  }
});

test('completion log-probs in the legacy format', async () => {
  const r = await client.completions.create({ model: 'tiny', prompt: [5, 6, 7], max_tokens: 3, logprobs: 2,
    temperature: 0, ignore_eos: true });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, 3);
  assert.equal(lp.token_logprobs.length, 3);
  // Greedy: the chosen token is the most likely one, so it heads its own top list.
  lp.top_logprobs.forEach((top, i) => assert.ok(Math.abs(Math.max(...Object.values(top)) - lp.token_logprobs[i]) < 1e-4));
});

test('a stop string cuts the text before it', async () => {
  const base = { model: 'tiny', prompt: [42, 43, 44], max_tokens: 12, temperature: 0, ignore_eos: true };
  const full = (await client.completions.create(base)).choices[0].text;
  const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 2);
  assert.ok(stop.length > 0);
  const cut = await client.completions.create({ ...base, stop: [stop] });
  assert.equal(cut.choices[0].text, full.slice(0, full.indexOf(stop)));
  assert.equal(cut.choices[0].finish_reason, 'stop');
});

test('n choices and echo', async () => {
  const r = await client.completions.create({ model: 'tiny', prompt: 'abc', max_tokens: 3, n: 3, echo: true, seed: 5,
    ignore_eos: true });
  assert.equal(r.choices.length, 3);
  r.choices.forEach((c, i) => { assert.equal(c.index, i); assert.ok(c.text.startsWith('abc')); });
  assert.equal(r.usage.completion_tokens, 9);
  await assert.rejects(client.completions.create({ model: 'tiny', prompt: 'abc', max_tokens: 3, echo: true, logprobs: 1 }),
    (e) => e.status === 400 && e.param === 'echo' && /prompt's log-probs/.test(e.message));
});

test('64 concurrent streams all complete with usage', async () => {
  const runs = Array.from({ length: 64 }, async (_, i) => {
    const stream = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: `n${i}` }],
      max_tokens: 6, stream: true, stream_options: { include_usage: true }, ignore_eos: true, seed: i });
    let usage = null, chunks = 0;
    for await (const chunk of stream) { chunks++; if (chunk.usage) usage = chunk.usage; }
    return { usage, chunks };
  });
  for (const { usage, chunks } of await Promise.all(runs)) {
    assert.equal(usage.completion_tokens, 6);
    assert.ok(chunks >= 7);
  }
});

test('errors come back in OpenAI shape with the right status', async () => {
  await assert.rejects(client.completions.create({ model: 'nope', prompt: 'x' }),
    (e) => e.status === 404 && e.code === 'model_not_found' && e.type === 'invalid_request_error');
  await assert.rejects(client.completions.create({ model: 'tiny', prompt: 'x', temperature: 7 }),
    (e) => e.status === 400 && e.param === 'temperature');
  await assert.rejects(client.completions.create({ model: 'tiny', prompt: [1, 2], max_tokens: 100000 }),
    (e) => e.status === 400 && /maximum context length/.test(e.message) && e.param === 'max_tokens' &&
      e.code === 'context_length_exceeded');
  await assert.rejects(client.completions.create({ model: 'tiny', prompt: new Array(5000).fill(1), max_tokens: 1 }),
    (e) => e.status === 400 && /5000 in the prompt/.test(e.message) && e.param === 'prompt');
  await assert.rejects(client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 5000 }), (e) => e.status === 400 && e.param === 'max_tokens' && /in the messages/.test(e.message));
  await assert.rejects(client.completions.create({ model: 'tiny', prompt: [999999999] }),
    (e) => e.status === 400 && e.param === 'prompt');
  const bad = await fetch(server.baseURL + '/v1/chat/completions', { method: 'POST', body: '{not json' });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.type, 'invalid_request_error');
  assert.equal((await fetch(server.baseURL + '/v1/nothing')).status, 404);
});

test('a client that disconnects mid-stream frees its sequence', async () => {
  const controller = new AbortController();
  const stream = await client.completions.create({ model: 'tiny', prompt: [7, 8], max_tokens: 3000, stream: true,
    ignore_eos: true }, { signal: controller.signal });
  let seen = 0;
  try {
    for await (const _ of stream) if (++seen === 3) controller.abort();
  } catch {
    // The SDK may end the iteration or throw on abort; either way the client is gone.
  }
  assert.ok(seen >= 3);
  // The gateway saw the client leave (status 499) and the engine dropped the sequence long
  // before its 3000 tokens could have been generated.
  let running = -1, text = '';
  for (let i = 0; i < 10 && running !== 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    text = await (await fetch(server.baseURL + '/metrics')).text();
    running = Number(text.match(/^troupe_num_requests_running (\S+)$/m)[1]);
  }
  assert.equal(running, 0);
  assert.match(text, /^troupe_requests_total\{endpoint="\/v1\/completions",status="499"\} 1$/m);
  const generated = Number(text.match(/^troupe_generation_tokens_total (\S+)$/m)[1]);
  await new Promise((r) => setTimeout(r, 300));
  const later = await (await fetch(server.baseURL + '/metrics')).text();
  assert.equal(Number(later.match(/^troupe_generation_tokens_total (\S+)$/m)[1]), generated);
});

test('/tokenize and /detokenize, as vLLM has them', async () => {
  const post = async (path, body) => (await fetch(server.baseURL + path, { method: 'POST', body: JSON.stringify(body) })).json();
  const plain = await post('/tokenize', { model: 'tiny', prompt: 'Hello world' });
  assert.deepEqual(plain.tokens, [9707, 1879]);  // Qwen3's ids for "Hello" and " world"
  assert.equal(plain.count, 2);
  assert.equal(plain.max_model_len, 4096);
  assert.deepEqual(await post('/detokenize', { model: 'tiny', tokens: plain.tokens }), { prompt: 'Hello world' });
  // The chat form renders the model's template first, exactly as a chat completion would.
  const chat = await post('/tokenize', { model: 'tiny', messages: [{ role: 'user', content: 'Hi' }],
    add_generation_prompt: true });
  const text = (await post('/detokenize', { model: 'tiny', tokens: chat.tokens })).prompt;
  assert.equal(text, '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
  const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 1 });
  assert.equal(r.usage.prompt_tokens, chat.count);
});

test('malformed JSON bodies never crash the server', async () => {
  let seed = 7;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const valid = JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], max_tokens: 2,
    stop: ['a'], logprobs: true, top_logprobs: 2, tools: [{ type: 'function', function: { name: 'f' } }] });
  const pieces = ['null', '[]', '{}', '-1', '1e999', '"\u0000"', 'true', '"\ud800"', '{"a":', ']', '9'.repeat(40)];
  for (let i = 0; i < 300; i++) {
    let body = valid;
    for (let k = 0; k < 1 + rand(3); k++) {
      const at = rand(body.length);
      body = rand(2) ? body.slice(0, at) + pieces[rand(pieces.length)] + body.slice(at + rand(8))
                     : body.slice(0, at) + body.slice(at + 1 + rand(5));
    }
    const path = ['/v1/chat/completions', '/v1/completions', '/tokenize', '/detokenize'][i % 4];
    const res = await fetch(server.baseURL + path, { method: 'POST', body });
    assert.ok([200, 400, 404].includes(res.status), `${path} ${body} -> ${res.status}`);
    const answer = await res.text();
    if (res.status !== 200) assert.ok(JSON.parse(answer).error.message.length > 0);
  }
  assert.equal((await fetch(server.baseURL + '/health')).status, 200);
});

test('health, version and metrics pass promtool', async () => {
  assert.equal((await fetch(server.baseURL + '/health')).status, 200);
  assert.equal(typeof (await (await fetch(server.baseURL + '/version')).json()).version, 'string');
  const text = await (await fetch(server.baseURL + '/metrics')).text();
  for (const name of ['troupe_requests_total', 'troupe_time_to_first_token_seconds_bucket', 'troupe_kv_cache_usage_ratio',
                      'troupe_prefix_cache_hit_ratio', 'troupe_e2e_request_latency_seconds_count'])
    assert.ok(text.includes(name), name);
  const file = join(mkdtempSync(join(tmpdir(), 'troupe_metrics_')), 'metrics.txt');
  writeFileSync(file, text);
  execFileSync('promtool', ['check', 'metrics'], { input: text });
});

test('API keys: 401 without the key, 200 with it', async () => {
  const guarded = await startServer(modelDir, ['--api-key', 'sk-right']);
  try {
    const wrong = new OpenAI({ baseURL: guarded.baseURL + '/v1', apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => e.status === 401);
    const right = new OpenAI({ baseURL: guarded.baseURL + '/v1', apiKey: 'sk-right', maxRetries: 0 });
    assert.equal((await right.models.list()).data[0].id, 'tiny');
  } finally {
    await guarded.stop();
  }
});

test('a full queue answers 429', async () => {
  const small = await startServer(modelDir, ['--max-pending', '1']);
  try {
    const c = new OpenAI({ baseURL: small.baseURL + '/v1', apiKey: 'x', maxRetries: 0 });
    const long = c.completions.create({ model: 'tiny', prompt: [1], max_tokens: 400, ignore_eos: true });
    await new Promise((r) => setTimeout(r, 50));
    await assert.rejects(c.completions.create({ model: 'tiny', prompt: [2], max_tokens: 2 }), (e) => e.status === 429);
    await long;
  } finally {
    await small.stop();
  }
});

test('SIGTERM finishes streams in flight, refuses new connections and exits 0', async () => {
  const draining = await startServer(modelDir);
  const c = new OpenAI({ baseURL: draining.baseURL + '/v1', apiKey: 'x', maxRetries: 0 });
  const stream = await c.completions.create({ model: 'tiny', prompt: [3, 4], max_tokens: 200, stream: true,
    stream_options: { include_usage: true }, ignore_eos: true });
  let chunks = 0, usage = null, exited = null;
  for await (const chunk of stream) {
    if (++chunks === 2) {
      exited = draining.stop();
      await new Promise((r) => setTimeout(r, 100));
      await assert.rejects(fetch(draining.baseURL + '/health'));
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(usage.completion_tokens, 200);
  assert.deepEqual(await exited, { code: 0, signal: null });
});

test('--served-model-name takes aliases, as vLLM\'s: each is listed, retrieved and served', async () => {
  const aliased = await startServer(modelDir, ['--served-model-name', 'tiny', 'qwen3-alias']);
  try {
    const c = new OpenAI({ baseURL: aliased.baseURL + '/v1', apiKey: 'unused', maxRetries: 0 });
    assert.deepEqual((await c.models.list()).data.map((m) => m.id), ['tiny', 'qwen3-alias']);
    assert.equal((await c.models.retrieve('qwen3-alias')).id, 'qwen3-alias');
    const r = await c.completions.create({ model: 'qwen3-alias', prompt: 'Hi', max_tokens: 2 });
    assert.equal(r.model, 'qwen3-alias');
    await assert.rejects(c.completions.create({ model: 'other', prompt: 'Hi', max_tokens: 2 }),
      (e) => e.status === 404 && e.code === 'model_not_found');
  } finally {
    await aliased.stop();
  }
});

test('cluster.conf configures serve; command-line flags win; a bad or cluster file exits 2 naming the line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'troupe_conf_'));
  const conf = join(dir, 'cluster.conf');
  writeFileSync(conf, `# one node\n[model]\npath = ${modelDir}\nserved_model_name = fromconf\n[gateway]\napi_key = sk-conf\n` +
                      `[engine]\nmax_num_seqs = 8\n[node.local]\naddress = 127.0.0.1\ndevices = cpu\n`);
  const configured = await startServer(modelDir, ['--config', conf]);  // startServer also passes --served-model-name tiny
  try {
    const keyed = new OpenAI({ baseURL: configured.baseURL + '/v1', apiKey: 'sk-conf', maxRetries: 0 });
    assert.deepEqual((await keyed.models.list()).data.map((m) => m.id), ['tiny']);
    const keyless = new OpenAI({ baseURL: configured.baseURL + '/v1', apiKey: 'other', maxRetries: 0 });
    await assert.rejects(keyless.models.list(), (e) => e.status === 401);
  } finally {
    await configured.stop();
  }
  writeFileSync(conf, '[engine]\nmax_num_seqs = 8\nmax_num_seqz = 3\n');
  const bad = spawnSync(process.env.TROUPE_BINARY, ['serve', '--config', conf], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /cluster\.conf:3: unknown key `max_num_seqz` in \[engine\]/);
  writeFileSync(conf, `[model]\npath = ${modelDir}\n[node.a]\naddress = 10.0.0.1\n[node.b]\naddress = 10.0.0.2\n`);
  const cluster = spawnSync(process.env.TROUPE_BINARY, ['serve', '--config', conf], { encoding: 'utf8' });
  assert.equal(cluster.status, 2);
  assert.match(cluster.stderr, /cluster\.conf:5: this file describes a cluster: start it with `troupe cluster up /);
  const device = spawnSync(process.env.TROUPE_BINARY, ['serve', '--model', modelDir, '--device', 'tpu'], { encoding: 'utf8' });
  assert.equal(device.status, 2);
  assert.match(device.stderr, /--device must be cpu or cuda, not tpu/);
});

test('two pipeline stages (--pipeline-stages or cluster.conf) give the one-stage tokens; too many exit 1', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'troupe_conf_'));
  const conf = join(dir, 'cluster.conf');
  writeFileSync(conf, `[model]\npath = ${modelDir}\n[engine]\npipeline_stages = 2\n`);
  const asks = [
    { prompt: [9707, 11, 1879, 13, 576, 3974], temperature: 0 },
    { prompt: 'The quick brown fox', temperature: 0.9, seed: 5 },
  ];
  const run = (c, ask) => c.completions.create({ model: 'tiny', max_tokens: 12, ignore_eos: true, logprobs: 1,
    return_tokens_as_token_ids: true, ...ask }).then((r) => [idsOf(r.choices[0]), r.choices[0].logprobs.token_logprobs]);
  const oneStage = await Promise.all(asks.map((ask) => run(client, ask)));
  for (const flags of [['--pipeline-stages', '2'], ['--config', conf]]) {
    const piped = await startServer(modelDir, flags);
    try {
      const c = new OpenAI({ baseURL: piped.baseURL + '/v1', apiKey: 'unused', maxRetries: 0 });
      assert.deepEqual(await Promise.all(asks.map((ask) => run(c, ask))), oneStage, flags.join(' '));
    } finally {
      await piped.stop();
    }
  }
  const tooMany = spawnSync(process.env.TROUPE_BINARY, ['serve', '--model', modelDir, '--pipeline-stages', '3'],
                            { encoding: 'utf8' });
  assert.equal(tooMany.status, 1);
  assert.match(tooMany.stderr, /3 pipeline stages: this model has 2 layers and each stage needs at least one/);
});
