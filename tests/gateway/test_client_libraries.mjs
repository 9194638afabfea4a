// Chat completions through client libraries nobody here wrote, on their usual settings,
// against a real troupe server with random weights: the Vercel AI SDK with
// @ai-sdk/openai-compatible (generateText, streamText, generateObject with zod schemas, a
// multi-step tool loop with execute) and LangChain's ChatOpenAI (bindTools,
// withStructuredOutput in jsonSchema and functionCalling modes). Every structured output
// and forced call is checked with ajv + ajv-formats against the schema zod writes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as ai from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import { makeTinyModel, startServer } from './server_process.mjs';

let server, model;
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);

function assertValid(schema, value, what) {
  const validate = ajv.compile(z.toJSONSchema(schema));
  assert.ok(validate(value), `${what}: ${JSON.stringify(value)} ${ajv.errorsText(validate.errors)}`);
}

before(async () => {
  server = await startServer(makeTinyModel(), ['--max-num-seqs', '16']);
  const troupe = createOpenAICompatible({ name: 'troupe', baseURL: server.baseURL + '/v1', apiKey: 'unused',
    supportsStructuredOutputs: true });
  model = troupe.chatModel('tiny');
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

// Strings without a length bound could run on forever with random weights (an e-mail's
// local part is any run of letters), so the open-ended ones have a max.
const Order = z.object({
  id: z.string().uuid(), email: z.string().email().max(40), placed: z.string().datetime(), count: z.number().int(),
  price: z.number().min(0).max(1000), kind: z.enum(['book', 'pen']), tags: z.array(z.string().max(6)).max(3),
  site: z.string().url().max(40).optional(),
});
const City = z.object({ city: z.string().min(1).max(12), days: z.number().int().min(1).max(7) });

test('AI SDK: generateText and streamText', async () => {
  const text = await ai.generateText({ model, prompt: 'Hello', maxOutputTokens: 8, seed: 1, maxRetries: 0 });
  assert.equal(text.usage.outputTokens, 8);
  assert.equal(text.finishReason, 'length');
  const stream = ai.streamText({ model, prompt: 'Hello', maxOutputTokens: 8, seed: 1, maxRetries: 0 });
  let streamed = '';
  for await (const delta of stream.textStream) streamed += delta;
  assert.equal(streamed, text.text);
});

test('AI SDK: generateObject with zod formats, integers, enums and arrays', async () => {
  for (const seed of [1, 2, 3]) {
    const { object } = await ai.generateObject({ model, schema: Order, prompt: 'An order', seed, maxOutputTokens: 1500,
      maxRetries: 0 });
    assertValid(Order, object, `seed ${seed}`);
  }
});

test('AI SDK: a multi-step tool loop runs the tool and answers', async () => {
  let ran = 0;
  const weather = ai.tool({ description: 'Weather of a city', inputSchema: City,
    execute: async ({ city, days }) => { ran++; return { city, days, forecast: 'sunny' }; } });
  const result = await ai.generateText({ model, tools: { weather }, prompt: 'Weather in Oslo for 3 days?', seed: 4,
    maxOutputTokens: 300, maxRetries: 0, stopWhen: ai.isStepCount(3),
    prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? 'required' : 'none' }),
    // Extra provider options go into the body as they are: one call, not calls until max_tokens.
    providerOptions: { troupe: { parallel_tool_calls: false } } });
  assert.equal(ran, 1);
  assert.ok(result.steps.length >= 2, 'a step with the call, then one with the answer');
  for (const call of result.steps[0].toolCalls) assertValid(City, call.input, 'tool input');
  assert.ok(result.steps[1].toolCalls.length === 0);
});

test('LangChain: bindTools with a forced tool, and withStructuredOutput both ways', async () => {
  const chat = new ChatOpenAI({ model: 'tiny', apiKey: 'unused', configuration: { baseURL: server.baseURL + '/v1' },
    maxRetries: 0, maxTokens: 1500, temperature: 1 });
  const bound = chat.bindTools([{ name: 'weather', description: 'Weather of a city', schema: City }], { tool_choice: 'weather' });
  const message = await bound.invoke('Weather in Oslo?');
  assert.ok(message.tool_calls.length >= 1);
  for (const call of message.tool_calls) {
    assert.equal(call.name, 'weather');
    assertValid(City, call.args, 'bound tool call');
  }
  for (const method of ['jsonSchema', 'functionCalling']) {
    const structured = chat.withStructuredOutput(Order, { method, name: 'order' });
    assertValid(Order, await structured.invoke('An order'), method);
  }
});
