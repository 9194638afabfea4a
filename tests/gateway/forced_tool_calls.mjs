// The forced tool_choice checks every chat-template markup must pass (hermes JSON, xml),
// through the official `openai` SDK: whatever the weights, the grammar holds the answer
// to calls of the allowed tools, each one's arguments checked with ajv (an independent
// JSON Schema validator) against its tool's schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';

const ajv = new Ajv({ allErrors: true });

export function assertValid(schema, value, what) {
  const validate = ajv.compile(schema);
  assert.ok(validate(value), `${what}: ${JSON.stringify(value)} ${ajv.errorsText(validate.errors)}`);
}

// The seeds each test draws answers with, and a chat request to the tiny model with `extra`.
export const seeds = [1, 2, 3, 4, 5, 6];
export const chat = (extra) => ({ model: 'tiny', messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  max_tokens: 600, ...extra });

// Registers the tests. client(): the SDK client once the server is up; tools: two tools,
// get_weather and search, whose schemas bound every string and array so that random
// weights end each call within max_tokens.
export function forcedToolCallTests(client, tools) {
  const schemaOf = Object.fromEntries(tools.map((t) => [t.function.name, t.function.parameters]));

  function assertValidCalls(message, allowed) {
    assert.equal(message.content, null);
    for (const call of message.tool_calls) {
      assert.equal(call.type, 'function');
      assert.ok(allowed.includes(call.function.name), call.function.name);
      assert.match(call.id, /^call_/);
      assertValid(schemaOf[call.function.name], JSON.parse(call.function.arguments), call.function.name);
    }
  }

  test('a named tool_choice always returns one valid call of that tool', async () => {
    const runs = seeds.map((seed) => client().chat.completions.create(chat({ tools, seed,
      tool_choice: { type: 'function', function: { name: 'search' } } })));
    for (const r of await Promise.all(runs)) {
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
      assert.equal(r.choices[0].message.tool_calls.length, 1);
      assertValidCalls(r.choices[0].message, ['search']);
    }
  });

  test('tool_choice "required" without parallel calls returns exactly one valid call', async () => {
    const runs = seeds.map((seed) => client().chat.completions.create(chat({ tools, seed, tool_choice: 'required',
      parallel_tool_calls: false })));
    for (const r of await Promise.all(runs)) {
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
      assert.equal(r.choices[0].message.tool_calls.length, 1);
      assertValidCalls(r.choices[0].message, ['get_weather', 'search']);
    }
  });

  test('tool_choice "required" with parallel calls returns one or more valid calls', async () => {
    const runs = seeds.map((seed) => client().chat.completions.create(chat({ tools, seed, tool_choice: 'required',
      max_tokens: 2000 })));
    let several = 0;
    for (const r of await Promise.all(runs)) {
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
      assert.ok(r.choices[0].message.tool_calls.length >= 1);
      several += r.choices[0].message.tool_calls.length > 1;
      assertValidCalls(r.choices[0].message, ['get_weather', 'search']);
    }
    assert.ok(several > 0, 'some answer makes several calls');
  });

  test('a forced call cut short by max_tokens is dropped: content null, no markup, finish "length"', async () => {
    for (const seed of seeds.slice(0, 3)) {
      const args = chat({ tools, seed, max_tokens: 6, tool_choice: { type: 'function', function: { name: 'search' } } });
      const whole = await client().chat.completions.create(args);
      assert.equal(whole.choices[0].finish_reason, 'length');
      assert.equal(whole.choices[0].message.content, null);
      assert.equal((whole.choices[0].message.tool_calls ?? []).length, 0);
      const chunks = [];
      for await (const chunk of await client().chat.completions.create({ ...args, stream: true })) chunks.push(chunk);
      const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
      assert.equal(text, '');
      assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
    }
  });

  test('streamed tool calls, reassembled by the SDK stream helper, equal the non-streamed ones', async () => {
    for (const extra of [{ tool_choice: { type: 'function', function: { name: 'get_weather' } } },
      { tool_choice: 'required', max_tokens: 2000 }]) {
      for (const seed of [7, 8]) {
        const args = chat({ tools, seed, ...extra });
        const whole = await client().chat.completions.create(args);
        const streamed = await client().chat.completions.stream(args).finalChatCompletion();
        const calls = (m) => m.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments }));
        assert.ok(whole.choices[0].message.tool_calls.length >= 1);
        assert.deepEqual(calls(streamed.choices[0].message), calls(whole.choices[0].message), JSON.stringify(extra));
        assert.equal(streamed.choices[0].finish_reason, 'tool_calls');
        assertValidCalls(streamed.choices[0].message, ['get_weather', 'search']);
      }
    }
  });
}
