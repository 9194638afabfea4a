// Anthropic's Messages API (/v1/messages, /v1/messages/count_tokens) through the official
// `@anthropic-ai/sdk`, against a real troupe server with random weights and an API key
// (the SDK sends it as x-api-key): messages, streaming, tools (tool_use inputs checked with
// ajv, tool_result round trips), count_tokens, and errors in Anthropic's shape.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';
import { makeTinyModel, startServer } from './server_process.mjs';

let server, client;
const ajv = new Ajv();

before(async () => {
  server = await startServer(makeTinyModel(), ['--api-key', 'sk-test']);
  client = new Anthropic({ baseURL: server.baseURL, apiKey: 'sk-test', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

const weather = { name: 'get_weather', description: 'Weather of a city',
  input_schema: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['c', 'f'] } },
    required: ['city', 'unit'], additionalProperties: false } };

test('a message: content blocks, stop_reason and usage', async () => {
  const m = await client.messages.create({ model: 'tiny', max_tokens: 6, system: 'Be brief.', top_k: 40,
    messages: [{ role: 'user', content: 'Hello' }] });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.match(m.id, /^msg_/);
  assert.equal(m.stop_reason, 'max_tokens');
  assert.equal(m.usage.output_tokens, 6);
  assert.ok(m.usage.input_tokens > 0);
  assert.ok(m.content.every((b) => ['text', 'thinking'].includes(b.type)));
});

test('stop_sequences end the text and are named', async () => {
  const free = await client.messages.create({ model: 'tiny', max_tokens: 30, messages: [{ role: 'user', content: 'Go' }],
    temperature: 0, thinking: { type: 'disabled' } });
  const text = free.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  const stop = text.slice(10, 13);
  const cut = await client.messages.create({ model: 'tiny', max_tokens: 30, messages: [{ role: 'user', content: 'Go' }],
    temperature: 0, thinking: { type: 'disabled' }, stop_sequences: [stop] });
  assert.equal(cut.stop_reason, 'stop_sequence');
  assert.equal(cut.stop_sequence, stop);
  assert.equal(cut.content.map((b) => b.text).join(''), text.slice(0, text.indexOf(stop)));
});

test('a stream: its events add up to the message the SDK assembles', async () => {
  const stream = client.messages.stream({ model: 'tiny', max_tokens: 12, messages: [{ role: 'user', content: 'Go' }],
    temperature: 0 });
  const types = [];
  let text = '';
  stream.on('streamEvent', (e) => types.push(e.type));
  stream.on('text', (delta) => { text += delta; });
  const message = await stream.finalMessage();
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  assert.equal(types.at(-2), 'message_delta');
  assert.ok(types.includes('content_block_start') && types.includes('content_block_delta') && types.includes('content_block_stop'));
  assert.equal(message.content.filter((b) => b.type === 'text').map((b) => b.text).join(''), text);
  assert.equal(message.stop_reason, 'max_tokens');
  const plain = await client.messages.create({ model: 'tiny', max_tokens: 12, messages: [{ role: 'user', content: 'Go' }],
    temperature: 0 });
  assert.deepEqual(plain.content, message.content);
});

test('tools: forced tool_use blocks with valid input, streamed as input_json_delta, and tool results', async () => {
  const forced = await client.messages.create({ model: 'tiny', max_tokens: 300, tools: [weather],
    tool_choice: { type: 'tool', name: 'get_weather' }, messages: [{ role: 'user', content: 'Weather in Oslo?' }] });
  assert.equal(forced.stop_reason, 'tool_use');
  const uses = forced.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1);
  assert.match(uses[0].id, /^toolu_/);
  assert.ok(ajv.validate(weather.input_schema, uses[0].input), JSON.stringify(uses[0].input));
  const stream = client.messages.stream({ model: 'tiny', max_tokens: 300, tools: [weather],
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
    messages: [{ role: 'user', content: 'Weather?' }] });
  let partial = '';
  stream.on('inputJson', (delta) => { partial += delta; });
  const streamed = await stream.finalMessage();
  const [use, ...more] = streamed.content.filter((b) => b.type === 'tool_use');
  assert.equal(more.length, 0, 'disable_parallel_tool_use: one call');
  assert.deepEqual(JSON.parse(partial), use.input);
  assert.ok(ajv.validate(weather.input_schema, use.input));
  const answered = await client.messages.create({ model: 'tiny', max_tokens: 5, tools: [weather], messages: [
    { role: 'user', content: 'Weather in Oslo?' }, { role: 'assistant', content: forced.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: uses[0].id, content: 'Sunny, 21 C' }] }] });
  // Anthropic's input_tokens leave out what the prefix cache read.
  const prompt = (u) => u.input_tokens + u.cache_read_input_tokens;
  assert.ok(prompt(answered.usage) > prompt(forced.usage));
  assert.ok(answered.usage.cache_read_input_tokens > 0, 'the first turn\'s prompt came from the prefix cache');
  const none = await client.messages.create({ model: 'tiny', max_tokens: 5, tools: [weather], tool_choice: { type: 'none' },
    messages: [{ role: 'user', content: 'x' }] });
  assert.ok(none.content.every((b) => b.type !== 'tool_use'));
});

test('count_tokens counts the prompt the template renders', async () => {
  const params = { model: 'tiny', system: 'Be brief.', messages: [{ role: 'user', content: 'Hello there' }], tools: [weather] };
  const counted = await client.messages.countTokens(params);
  const m = await client.messages.create({ ...params, max_tokens: 1 });
  assert.equal(counted.input_tokens, m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0));
});

test('errors come in Anthropic\'s shape, and the key is checked', async () => {
  await assert.rejects(client.messages.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.BadRequestError && e.error.type === 'error' && e.error.error.type === 'invalid_request_error' &&
      /max_tokens/.test(e.error.error.message));
  await assert.rejects(client.messages.create({ model: 'tiny', max_tokens: 5, messages: [{ role: 'user',
    content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }] }),
    (e) => e.status === 400 && /'image'/.test(e.error.error.message));
  await assert.rejects(client.messages.create({ model: 'tiny', max_tokens: 5, messages: [{ role: 'user', content: 'x' }],
    tools: [{ type: 'web_search_20250305', name: 'web_search' }] }), (e) => e.status === 400 && /web_search_20250305/.test(e.message));
  await assert.rejects(client.messages.create({ model: 'other', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.NotFoundError && e.error.error.type === 'not_found_error');
  await assert.rejects(client.messages.create({ model: 'tiny', max_tokens: 5, messages: [{ role: ['user'], content: 'x' }] }),
    (e) => e.status === 400 && /role must be/.test(e.error.error.message));
  const wrong = new Anthropic({ baseURL: server.baseURL, apiKey: 'sk-wrong', maxRetries: 0 });
  await assert.rejects(wrong.messages.create({ model: 'tiny', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.AuthenticationError && e.error.error.type === 'authentication_error');
});
