// Structured outputs and forced tool calls (Qwen3's hermes markup) through the official
// `openai` SDK, against a real troupe server with random weights: whatever the weights,
// the grammar holds, so every answer is checked with ajv (an independent JSON Schema
// validator) against the schema the request gave.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { assertValid, chat, forcedToolCallTests, seeds } from './forced_tool_calls.mjs';
import { makeTinyModel, startServer } from './server_process.mjs';

let server, client;

before(async () => {
  server = await startServer(makeTinyModel(), ['--max-num-seqs', '32']);
  client = new OpenAI({ baseURL: server.baseURL + '/v1', apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

// Bounded schemas (string lengths, array sizes, enums): random weights finish them well
// within max_tokens, so every answer must end on its own and validate.
const weather = { type: 'object', properties: {
  city: { type: 'string', minLength: 1, maxLength: 16 },
  unit: { enum: ['celsius', 'fahrenheit'] },
  days: { type: 'integer' } }, required: ['city', 'unit'], additionalProperties: false };
const search = { type: 'object', properties: {
  query: { type: 'string', maxLength: 24 },
  exact: { type: 'boolean' } }, required: ['query', 'exact'], additionalProperties: false };
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: weather } },
  { type: 'function', function: { name: 'search', description: 'Search the web', parameters: search } },
];

forcedToolCallTests(() => client, tools);

const order = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    customer: { $ref: '#/$defs/customer' },
    items: { type: 'array', minItems: 1, maxItems: 3, items: { type: 'object', properties: {
      sku: { type: 'string', maxLength: 8 }, quantity: { type: 'integer' }, price: { type: 'number' } },
      required: ['sku', 'quantity'], additionalProperties: false } },
    status: { enum: ['open', 'paid', 'shipped'] },
    gift: { anyOf: [{ type: 'null' }, { type: 'string', maxLength: 12 }] },
    express: { type: 'boolean' },
  },
  required: ['id', 'customer', 'items', 'status', 'express'],
  additionalProperties: false,
  $defs: { customer: { type: 'object', properties: { name: { type: 'string', maxLength: 10 },
    vip: { type: 'boolean' } }, required: ['name'], additionalProperties: false } },
};

test('json_schema responses validate, for chat and for completions', async () => {
  const responseFormat = { type: 'json_schema', json_schema: { name: 'order', schema: order, strict: true } };
  const chats = seeds.map((seed) => client.chat.completions.create(chat({ seed, response_format: responseFormat })));
  const completions = seeds.map((seed) => client.completions.create({ model: 'tiny', prompt: 'Order:', seed,
    max_tokens: 600, response_format: responseFormat }));
  for (const r of await Promise.all(chats)) {
    assert.equal(r.choices[0].finish_reason, 'stop');
    assertValid(order, JSON.parse(r.choices[0].message.content), 'chat');
  }
  for (const r of await Promise.all(completions)) {
    assert.equal(r.choices[0].finish_reason, 'stop');
    assertValid(order, JSON.parse(r.choices[0].text), 'completion');
  }
});

test('the properties come in the order the schema gives them', async () => {
  const schema = { type: 'object', properties: { zulu: { type: 'boolean' }, alpha: { type: 'boolean' } },
    required: ['zulu', 'alpha'], additionalProperties: false };
  const r = await client.chat.completions.create(chat({ seed: 1,
    response_format: { type: 'json_schema', json_schema: { name: 'o', schema } } }));
  assert.deepEqual(Object.keys(JSON.parse(r.choices[0].message.content)), ['zulu', 'alpha']);
});

// V8's JSON parser as the reference for a cut answer: a prefix of JSON fails to parse
// only where the text ends.
function assertJsonPrefix(text) {
  try {
    JSON.parse(text);
  } catch (e) {
    const at = e.message.match(/at position (\d+)/);
    assert.ok(/Unexpected end of JSON input/.test(e.message) || (at && Number(at[1]) === text.length),
      `${e.message}: ${text.slice(0, 200)}`);
  }
}

test('json_object answers are JSON objects, or prefixes of one when max_tokens cuts them', async () => {
  // Strings are unbounded here, and random weights seldom close one: most answers are cut.
  const r = await client.chat.completions.create(chat({ seed: 2, n: 3, max_tokens: 200,
    response_format: { type: 'json_object' } }));
  for (const c of r.choices) {
    assert.ok(c.message.content.startsWith('{'));
    if (c.finish_reason === 'stop') assertValid({ type: 'object' }, JSON.parse(c.message.content), 'json_object');
    else assertJsonPrefix(c.message.content);
  }
});

test('guided_choice answers one of the choices', async () => {
  const choices = ['red', 'green', 'blue'];
  for (const seed of seeds) {
    const r = await client.chat.completions.create(chat({ seed, guided_choice: choices }));
    assert.ok(choices.includes(r.choices[0].message.content), r.choices[0].message.content);
    const c = await client.completions.create({ model: 'tiny', prompt: 'Color:', seed, max_tokens: 10,
      guided_choice: choices });
    assert.ok(choices.includes(c.choices[0].text), c.choices[0].text);
    assert.equal(c.choices[0].finish_reason, 'stop');
  }
});

test('what the grammars cannot follow is a 400 naming it, never a 500', async () => {
  const rejects = async (extra, param, pattern) => assert.rejects(client.chat.completions.create(chat(extra)),
    (e) => e.status === 400 && e.param === param && pattern.test(e.message), JSON.stringify(extra));
  const format = (schema) => ({ response_format: { type: 'json_schema', json_schema: { name: 's', schema, strict: true } } });
  await rejects(format({ type: 'object', properties: { name: { type: 'string', not: { const: 'a' } } } }), 'response_format',
    /unsupported JSON Schema keyword 'not' at #\/properties\/name/);
  await rejects(format({ type: 'string', pattern: '(a)\\1' }), 'response_format', /a backreference \(\\1\)/);
  await rejects(format({ oneOf: [{ type: 'string' }, { type: 'string' }] }), 'response_format', /oneOf whose branches may overlap/);
  await rejects(format({ type: 'array', maxItems: 1000000 }), 'response_format', /maxItems above 1024/);
  await rejects(format({ $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/a' } } }), 'response_format', /left recursion/);
  await rejects({ response_format: { type: 'yaml' } }, 'response_format', /response_format must be/);
  await rejects({ guided_choice: [] }, 'guided_choice', /non-empty list of strings/);
  await rejects({ guided_choice: ['a'], response_format: { type: 'json_object' } }, 'guided_choice', /exclude each other/);
  const negated = (strict) => [{ type: 'function', function: { name: 'f', strict, parameters: { type: 'object',
    properties: { x: { type: 'integer', not: { const: 1 } } }, required: ['x'], additionalProperties: false } } }];
  await rejects({ tools: negated(true), tool_choice: 'required' }, 'tools', /tool 'f': unsupported JSON Schema keyword 'not'/);
  // Unforced, such a tool is only offered to the model: nothing needs its schema followed.
  const auto = await client.chat.completions.create(chat({ tools: negated(true), max_tokens: 2 }));
  assert.equal(auto.choices[0].message.role, 'assistant');
  // Without strict, what cannot be enforced is left out, as OpenAI's best effort.
  for (const strict of [false, undefined]) {
    const r = await client.chat.completions.create(chat({ tools: negated(strict), tool_choice: 'required', seed: 3 }));
    assert.ok(Number.isInteger(JSON.parse(r.choices[0].message.tool_calls[0].function.arguments).x));
    const s = await client.chat.completions.create(chat({ seed: 3, response_format: { type: 'json_schema',
      json_schema: { name: 's', strict, schema: { type: 'integer', not: { const: 1 } } } } }));
    assert.ok(Number.isInteger(JSON.parse(s.choices[0].message.content)));
  }
});
