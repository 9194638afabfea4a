// The Responses API (/v1/responses) through the official `openai` SDK and the OpenAI Agents
// SDK on its default settings (which speak the Responses API), against a real troupe server
// with random weights: the grammar holds whatever the weights, so structured outputs and
// forced calls are checked with ajv and by the SDKs' own parsers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv from 'ajv';
import { z } from 'zod';
import { Agent, Runner, tool, setDefaultOpenAIClient } from '@openai/agents';
import { makeTinyModel, startServer } from './server_process.mjs';

let server, client;
const ajv = new Ajv();

before(async () => {
  server = await startServer(makeTinyModel(), ['--max-num-seqs', '16']);
  client = new OpenAI({ baseURL: server.baseURL + '/v1', apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

const weather = { type: 'function', name: 'get_weather', description: 'Weather of a city', strict: true,
  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
    required: ['city', 'days'], additionalProperties: false } };

test('a response: output items, usage, and what it repeats of the request', async () => {
  const r = await client.responses.create({ model: 'tiny', input: 'Hello', instructions: 'Answer briefly.',
    max_output_tokens: 6, temperature: 0.5, metadata: { run: '1' }, seed: 1 });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.equal(r.status, 'incomplete');
  assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.output.at(-1).type, 'message');
  assert.equal(r.usage.output_tokens, 6);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + 6);
  assert.equal(r.instructions, 'Answer briefly.');
  assert.deepEqual(r.metadata, { run: '1' });
  assert.equal(r.temperature, 0.5);
  assert.equal(typeof r.output_text, 'string');  // the SDK's join of the output_text parts
  assert.ok(r.output_text.length > 0);
});

test('streamed events come in the documented order and add up to the final response', async () => {
  const stream = client.responses.stream({ model: 'tiny', input: 'Tell me', max_output_tokens: 12, seed: 7 });
  const types = [];
  let text = '';
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
  }
  const final = await stream.finalResponse();
  assert.equal(types[0], 'response.created');
  assert.equal(types[1], 'response.in_progress');
  assert.ok(types.includes('response.output_item.added') && types.includes('response.content_part.added'));
  assert.ok(types.indexOf('response.output_text.done') < types.indexOf('response.output_item.done'));
  assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)));
  assert.equal(final.output_text, text);
  const same = await client.responses.create({ model: 'tiny', input: 'Tell me', max_output_tokens: 12, seed: 7 });
  assert.equal(same.output_text, text, 'a stream and a plain request with one seed write the same text');
});

test('forced function calls, tool results as input items, and text.format json_schema', async () => {
  const forced = await client.responses.create({ model: 'tiny', input: 'Weather in Paris?', tools: [weather],
    tool_choice: 'required', max_output_tokens: 200, seed: 3 });
  const calls = forced.output.filter((item) => item.type === 'function_call');
  assert.ok(calls.length >= 1, JSON.stringify(forced.output));
  for (const call of calls) {
    assert.equal(call.name, 'get_weather');
    assert.ok(ajv.validate(weather.parameters, JSON.parse(call.arguments)), call.arguments);
  }
  assert.ok(!forced.output.some((item) => item.type === 'message'), 'calls alone: no message item');
  const named = await client.responses.create({ model: 'tiny', input: 'x', tools: [weather, { ...weather, name: 'other' }],
    tool_choice: { type: 'function', name: 'other' }, parallel_tool_calls: false, max_output_tokens: 200 });
  assert.deepEqual(named.output.map((i) => i.name), ['other']);
  // The call and its output sent back continue the conversation.
  const next = await client.responses.create({ model: 'tiny', tools: [weather], max_output_tokens: 4, input: [
    { role: 'user', content: 'Weather in Paris?' }, calls[0],
    { type: 'function_call_output', call_id: calls[0].call_id, output: '{"temp": 21}' }] });
  assert.ok(next.usage.input_tokens > forced.usage.input_tokens);
  const schema = { type: 'object', properties: { answer: { type: 'string', maxLength: 20 }, score: { type: 'integer', minimum: 0, maximum: 10 } },
    required: ['answer', 'score'], additionalProperties: false };
  const structured = await client.responses.create({ model: 'tiny', input: 'Rate it', max_output_tokens: 200, seed: 5,
    text: { format: { type: 'json_schema', name: 'rating', schema, strict: true } } });
  assert.equal(structured.status, 'completed');
  assert.ok(ajv.validate(schema, JSON.parse(structured.output_text)), structured.output_text);
});

test('stored responses: previous_response_id, retrieve, delete, and what is not stored', async () => {
  const first = await client.responses.create({ model: 'tiny', input: 'My name is Ada.', max_output_tokens: 5 });
  const second = await client.responses.create({ model: 'tiny', input: 'What is my name?', previous_response_id: first.id,
    max_output_tokens: 5 });
  assert.equal(second.previous_response_id, first.id);
  // The second prompt holds the first turn: its input and its reply.
  assert.ok(second.usage.input_tokens >= first.usage.input_tokens + first.usage.output_tokens, JSON.stringify([first.usage, second.usage]));
  const got = await client.responses.retrieve(first.id);
  assert.equal(got.id, first.id);
  assert.equal(got.output_text, first.output_text);
  const deleted = await client.responses.delete(first.id);
  assert.equal(deleted?.deleted ?? true, true);
  await assert.rejects(client.responses.retrieve(first.id), (e) => e.status === 404);
  await assert.rejects(client.responses.create({ model: 'tiny', input: 'x', previous_response_id: first.id }),
    (e) => e.status === 404 && e.param === 'previous_response_id');
  const unstored = await client.responses.create({ model: 'tiny', input: 'x', store: false, max_output_tokens: 2 });
  await assert.rejects(client.responses.retrieve(unstored.id), (e) => e.status === 404);
});

test('a streaming response cancelled midway ends as cancelled', async () => {
  const stream = await client.responses.create({ model: 'tiny', input: 'Go on', max_output_tokens: 4000, stream: true,
    ignore_eos: true });
  let id, last, cancelled;
  for await (const event of stream) {
    if (event.type === 'response.created') id = event.response.id;
    if (event.type === 'response.output_text.delta' && !cancelled) cancelled = client.responses.cancel(id);
    last = event;
  }
  const answer = await cancelled;
  assert.equal(answer.status, 'cancelled');
  assert.equal(last.type, 'response.incomplete');
  assert.equal(last.response.status, 'cancelled');
  assert.ok(last.response.usage.output_tokens < 4000);
  await assert.rejects(client.responses.cancel('resp_unknown'), (e) => e.status === 404);
});

test('what the server cannot do is a 400 naming it', async () => {
  const rejects = (body, param, pattern) => assert.rejects(client.responses.create({ model: 'tiny', input: 'x', ...body }),
    (e) => e.status === 400 && e.param === param && pattern.test(e.message), JSON.stringify(body));
  await rejects({ tools: [{ type: 'web_search' }] }, 'tools[0].type', /'web_search' are not supported/);
  await rejects({ tools: [{ type: 'file_search', vector_store_ids: ['v'] }] }, 'tools[0].type', /'file_search'/);
  await rejects({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'http://x/y.png' }] }] },
    'input[0].content[0].type', /input_image/);
  await rejects({ background: true }, 'background', /not supported/);
  await rejects({ input: [{ role: ['user'], content: 'x' }] }, 'input[0].role', /unknown role/);
  await rejects({ input: [{ type: 7, role: 'user', content: 'x' }] }, 'input[0].type', /must be a string/);
  await assert.rejects(client.responses.create({ model: 'nope', input: 'x' }), (e) => e.status === 404);
});

test('the Agents SDK on its defaults: a function tool, an output type and a handoff', async () => {
  setDefaultOpenAIClient(client);
  const runner = new Runner({ tracingDisabled: true });
  let called = 0;
  const getWeather = tool({ name: 'get_weather', description: 'Weather of a city',
    parameters: z.object({ city: z.string().max(10) }), execute: async ({ city }) => { called++; return `Sunny in ${city}`; } });
  const Report = z.object({ city: z.string().max(10), temperature: z.number().int().min(-50).max(60) });
  const reporter = new Agent({ name: 'reporter', model: 'tiny', instructions: 'Report the weather.', tools: [getWeather],
    outputType: Report, modelSettings: { toolChoice: 'required', parallelToolCalls: false, maxTokens: 400 } });
  const result = await runner.run(reporter, 'Weather in Oslo?', { maxTurns: 4 });
  assert.equal(called, 1, 'the forced call ran the tool once; the next turn answered');
  assert.ok(result.newItems.some((i) => i.type === 'tool_call_output_item'));
  assert.ok(Report.safeParse(result.finalOutput).success, JSON.stringify(result.finalOutput));

  const specialist = new Agent({ name: 'specialist', model: 'tiny', instructions: 'Answer.', outputType: Report,
    modelSettings: { maxTokens: 400 } });
  const triage = new Agent({ name: 'triage', model: 'tiny', instructions: 'Hand off.', handoffs: [specialist],
    modelSettings: { toolChoice: 'required', parallelToolCalls: false, maxTokens: 400 } });
  const handed = await runner.run(triage, 'Weather in Rome?', { maxTurns: 4 });
  assert.equal(handed.lastAgent.name, 'specialist');
  assert.ok(Report.safeParse(handed.finalOutput).success, JSON.stringify(handed.finalOutput));
});
