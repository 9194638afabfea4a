// Forced tool calls for a model whose chat template teaches the xml markup (Qwen3.5's
// template on the tiny random-weight model), through the official `openai` SDK against a
// real troupe server: the grammar holds the calls to the xml markup, the gateway reads
// them back, and every call's arguments are checked with ajv against the tool's schema.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { chat, forcedToolCallTests } from './forced_tool_calls.mjs';
import { makeTinyModel, startServer, sourceDir } from './server_process.mjs';

let server, client;

// The tiny model with Qwen3.5's chat template in place of Qwen3's.
function makeXmlTemplateModel() {
  const dir = makeTinyModel();
  const configPath = join(dir, 'tokenizer_config.json');
  const config = JSON.parse(readFileSync(configPath, 'utf8'));
  config.chat_template = readFileSync(join(sourceDir, 'tests/text/templates/qwen3_5.jinja'), 'utf8');
  writeFileSync(configPath, JSON.stringify(config));
  return dir;
}

before(async () => {
  server = await startServer(makeXmlTemplateModel(), ['--max-num-seqs', '32']);
  client = new OpenAI({ baseURL: server.baseURL + '/v1', apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

// Bounded strings and arrays: random weights finish every call well within max_tokens.
const weather = { type: 'object', properties: {
  city: { type: 'string', minLength: 1, maxLength: 16 },
  unit: { enum: ['celsius', 'fahrenheit'] },
  days: { type: 'integer' },
  hours: { type: 'array', items: { type: 'integer' }, maxItems: 3 } },
  required: ['city', 'unit'], additionalProperties: false };
const search = { type: 'object', properties: {
  query: { type: 'string', maxLength: 24 },
  exact: { type: 'boolean' },
  note: { type: ['string', 'null'], maxLength: 8 } }, required: ['query', 'exact'], additionalProperties: false };
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: weather } },
  { type: 'function', function: { name: 'search', description: 'Search the web', parameters: search } },
];

test('the template teaches the xml markup', async () => {
  const r = await fetch(server.baseURL + '/tokenize', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], tools }) });
  const { tokens } = await r.json();
  const d = await fetch(server.baseURL + '/detokenize', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', tokens }) });
  assert.match((await d.json()).prompt, /<function=example_function_name>/);
});

forcedToolCallTests(() => client, tools);

test('what the xml markup cannot carry is a 400 naming it, never a 500', async () => {
  const rejects = async (parameters, pattern) => assert.rejects(client.chat.completions.create(chat({
    tools: [{ type: 'function', function: { name: 'f', parameters, strict: true } }], tool_choice: 'required' })),
  (e) => e.status === 400 && e.param === 'tools' && pattern.test(e.message), JSON.stringify(parameters));
  await rejects({ type: 'object', properties: { x: { type: 'integer', not: {} } } },
    /tool 'f': unsupported JSON Schema keyword 'not' at #\/properties\/x/);
  await rejects({ anyOf: [{ type: 'object' }] }, /'anyOf' in the parameters of an xml tool call/);
  await rejects({ type: 'object', properties: { x: { type: 'string', enum: ['</parameter>'] } } }, /cannot write raw/);
});
