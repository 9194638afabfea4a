// troupe's JSON Schema grammars against independent references: random walks through each
// grammar's token mask (tests/support/schema_walks.cpp) must be JSON that ajv with
// ajv-formats accepts for the schema, for schemas written by zod 4 (z.toJSONSchema) and by
// hand; and each pattern's automaton must agree with V8's RegExp (Unicode mode, as JSON
// Schema reads patterns) on the walks' strings and on mutations of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { z } from 'zod';

const binary = process.env.TROUPE_SCHEMA_WALKS;
const ajv = new Ajv2020({ strict: false, allErrors: true });
const ajvDraft7 = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
addFormats(ajvDraft7);

function ask(mode, requests, count = 25) {
  const r = spawnSync(binary, mode === 'walks' ? ['walks', String(count)] : ['match'], {
    input: requests.map((x) => JSON.stringify(x)).join('\n') + '\n', encoding: 'utf8', timeout: 120000,
    maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim().split('\n').map((line) => JSON.parse(line));
}

// Every walk parses and validates; most walks finish.
function checkWalks(named) {
  const answers = ask('walks', named.map(([, schema]) => ({ schema })));
  answers.forEach((answer, i) => {
    const [name, schema] = named[i];
    assert.equal(answer.defect, undefined, `${name}: ${answer.defect}`);
    assert.equal(answer.error, undefined, `${name}: ${answer.error}`);
    assert.ok(answer.texts.length >= 20, `${name}: only ${answer.texts.length} walks finished`);
    const validator = schema.$schema?.includes('draft-07') ? ajvDraft7 : ajv;
    const validate = validator.compile(schema);
    for (const text of answer.texts) {
      const value = JSON.parse(text);
      assert.ok(validate(value), `${name}: ${text} ${validator.errorsText(validate.errors)}`);
    }
  });
  return answers;
}

test('zod 4 schemas: integers, formats, regexes, records, tuples, unions', () => {
  const schemas = {
    int: z.object({ n: z.number().int(), p: z.number().int().positive(), r: z.number().int().min(-40).max(212) }),
    formats: z.object({ email: z.string().email(), id: z.string().uuid(), at: z.string().datetime(),
      site: z.string().url(), day: z.iso.date(), clock: z.iso.time(), ip: z.ipv4(), ip6: z.ipv6() }),
    strings: z.object({ code: z.string().regex(/^[A-Z]{2}\d{3}$/), word: z.string().min(2).max(8),
      nick: z.string().regex(/^[a-z]+$/).max(6), mail: z.string().email().max(40), tag: z.string().startsWith('x-') }),
    numbers: z.object({ price: z.number().min(0.5).max(10).multipleOf(0.25), ratio: z.number().gt(0).lt(1),
      count: z.number().int().multipleOf(5).nonnegative().max(1000) }),
    collections: z.object({ tags: z.array(z.enum(['a', 'b', 'c'])).min(1).max(3), scores: z.record(z.string(), z.number().int()),
      pair: z.tuple([z.string().max(5), z.boolean()]), maybe: z.string().max(4).nullable() }),
    unions: z.object({ shape: z.discriminatedUnion('kind', [z.object({ kind: z.literal('circle'), r: z.number().positive() }),
      z.object({ kind: z.literal('square'), side: z.number().int().min(1).max(9) })]), either: z.union([z.number().int(), z.string().max(3)]) }),
  };
  checkWalks(Object.entries(schemas).map(([name, s]) => [name, z.toJSONSchema(s)]));
});

test('hand-written schemas: bounds, patterns, formats, objects, arrays, allOf', () => {
  const formats = ['date-time', 'date', 'time', 'duration', 'email', 'uuid', 'uri', 'hostname', 'ipv4', 'ipv6'];
  checkWalks([
    ['integer range', { type: 'integer', minimum: -5, maximum: 17 }],
    ['exclusive integers', { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 100 }],
    ['decimal range', { type: 'number', minimum: -2.5, maximum: 3.75 }],
    ['above a tenth', { type: 'number', exclusiveMinimum: 0.1, maximum: 0.3 }],
    ['negative range', { type: 'number', minimum: -1000.125, exclusiveMaximum: -999 }],
    ['multiples of 7', { type: 'integer', multipleOf: 7, minimum: -50, maximum: 50 }],
    ['quarters', { type: 'number', multipleOf: 0.25, minimum: -3, maximum: 3 }],
    ['searched pattern', { type: 'string', pattern: 'q[0-9]*' }],
    ['anchored pattern', { type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' }],
    ['unicode pattern', { type: 'string', pattern: '^[ä-ü]+[^\\x00-\\x7f]?$' }],
    ['escapes in a pattern', { type: 'string', pattern: '^["\\\\/<\\n\\t]{1,4}$' }],
    ['pattern and lengths', { type: 'string', pattern: '^(foo|bar)+$', minLength: 6, maxLength: 12 }],
    ...formats.map((f) => [`format ${f}`, { type: 'string', format: f }]),
    ['email of at most 20', { type: 'string', format: 'email', maxLength: 20 }],
    ['property names', { type: 'object', propertyNames: { pattern: '^[a-z]{1,3}$' }, additionalProperties: { type: 'integer' } }],
    ['pattern properties', { type: 'object', properties: { s_fixed: { type: 'string', maxLength: 3 } },
      patternProperties: { '^s_': { type: 'string', maxLength: 2 }, '^n_': { type: 'number' } }, additionalProperties: false }],
    ['property counts', { type: 'object', properties: { a: { type: 'boolean' }, b: { type: 'boolean' }, c: { type: 'null' },
      d: { type: 'boolean' }, e: { type: 'null' } }, minProperties: 2, maxProperties: 3, additionalProperties: false }],
    ['a bounded dictionary', { type: 'object', additionalProperties: { type: 'boolean' }, maxProperties: 2 }],
    ['closed tuple', { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string', maxLength: 2 }], items: false }],
    ['open tuple', { type: 'array', prefixItems: [{ const: 'x' }], items: { type: 'integer' }, minItems: 3, maxItems: 5 }],
    ['draft 7 tuple', { $schema: 'http://json-schema.org/draft-07/schema#', type: 'array', items: [{ type: 'boolean' }], additionalItems: false }],
    ['unique but at most one', { type: 'array', items: { type: 'integer' }, uniqueItems: true, maxItems: 1 }],
    ['allOf', { allOf: [{ type: 'object', properties: { a: { type: 'integer', minimum: 0 } }, required: ['a'] },
      { properties: { a: { maximum: 9 }, b: { type: 'string', maxLength: 2 } }, required: ['b'] }] }],
    ['allOf closed', { allOf: [{ type: 'object', properties: { a: { type: 'boolean' }, z: { type: 'null' } },
      additionalProperties: false }, { properties: { a: { const: true }, b: { type: 'integer' } }, required: ['a'] }] }],
    ['$ref with siblings', { $defs: { base: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] } },
      $ref: '#/$defs/base', properties: { id: { minimum: 1, maximum: 3 } }, additionalProperties: false }],
    ['oneOf told apart', { oneOf: [{ type: 'object', properties: { t: { const: 'a' }, x: { type: 'integer' } }, required: ['t'],
      additionalProperties: false }, { type: 'object', properties: { t: { enum: ['b', 'c'] } }, required: ['t'],
      additionalProperties: false }] }],
  ]);
});

test('what cannot be enforced is named when strict, and left out when not', () => {
  const cases = [
    [{ type: 'string', pattern: '^(?=a)' }, 'the pattern uses a lookahead (?=...), which no grammar can enforce, at offset 1'],
    [{ type: 'string', pattern: '(a)\\1' }, 'a backreference (\\1)'],
    [{ type: 'string', pattern: '\\bword' }, 'a word boundary (\\b)'],
    [{ type: 'string', pattern: '(?<!a)b' }, 'a negative lookbehind'],
    [{ type: 'string', format: 'credit-card' }, "unsupported format 'credit-card' at #/format"],
    [{ type: 'array', uniqueItems: true }, 'uniqueItems'],
    [{ not: { type: 'null' } }, "unsupported JSON Schema keyword 'not' at #"],
    [{ oneOf: [{ type: 'integer' }, { type: 'number' }] }, 'oneOf whose branches may overlap'],
  ];
  const strict = ask('walks', cases.map(([schema]) => ({ schema })), 3);
  strict.forEach((answer, i) => assert.ok(answer.error?.includes(cases[i][1]), `${JSON.stringify(cases[i][0])}: ${JSON.stringify(answer)}`));
  const lenient = ask('walks', cases.map(([schema]) => ({ schema, strict: false })), 3);
  lenient.forEach((answer, i) => assert.ok(answer.texts, `${JSON.stringify(cases[i][0])}: ${JSON.stringify(answer)}`));
});

test('pathological patterns compile within their bounds or are refused', () => {
  const patterns = ['(a*)*b', '(a|a)*c', '^(a+)+$', '(?:a{1000}){1000}', 'x{100000}', '(a|b)*a(a|b){20}', '((((((((((a*)*)*)*)*)*)*)*)*)*)*',
    '.{1,1000}.{1,1000}', '(' .repeat(70) + ')'.repeat(70)];
  const answers = ask('walks', patterns.map((pattern) => ({ schema: { type: 'string', pattern } })), 2);
  answers.forEach((answer, i) => {
    assert.equal(answer.defect, undefined);
    if (answer.error) assert.match(answer.error, /automaton|above|nested|takes too long/, patterns[i]);
    else for (const t of answer.texts) assert.ok(new RegExp(patterns[i], 'u').test(JSON.parse(t)), `${patterns[i]}: ${t}`);
  });
  assert.ok(answers[3].error && answers[5].error, 'a huge repetition and a blown-up search are refused');
  assert.ok(answers[0].texts && answers[2].texts, 'nested stars compile');
});

test('pattern automata agree with V8 RegExp', () => {
  const patterns = ['ab+c', '^a.c$', '^[^a-c]*$', '(foo|bar)baz', '^\\d{2,4}$', '^\\w+@\\w+\\.com$', '^\\s*$', '^[\\S]{2}$',
    'x?y*z+', '^(?:ab|cd){2}$', '^[\\u00e0-\\u00ff]+$', '^\\u{1F600}$', '^[a\\-z]$', '^\\.\\*\\+$', '^[.]$', '^\\x41\\cJ$',
    '^[\\d\\W]+$', '$^', '^$', 'a|^b', '(?<name>q)r', '^[^]$', '^[]$|z'];
  const seeds = ['abc', 'abbbc', 'xabcx', 'ac', 'a\nc', 'axc', 'foobaz', 'barbaz', 'foobarbaz', '12', '12345', 'me@x.com', ' ',
    '', ' \t', 'ab', 'é', 'ÿà', '😀', 'a-z', '-', '.*+', '.', 'A\n', '1!', 'abcd', 'cdab', 'q', 'qr', 'b', 'zz', 'z', '\u2028'];
  const walked = ask('walks', patterns.map((pattern) => ({ schema: { type: 'string', pattern } })), 15);
  const requests = patterns.map((pattern, i) => {
    const texts = new Set(seeds);
    for (const t of walked[i].texts ?? []) {
      const s = JSON.parse(t);
      texts.add(s);
      texts.add(s.slice(1));
      texts.add(s.slice(0, -1));
      texts.add(s + 'a');
      texts.add('7' + s);
    }
    return { pattern, texts: [...texts].filter((t) => t.isWellFormed()) };
  });
  ask('match', requests).forEach((answer, i) => {
    assert.equal(answer.error, undefined, `${patterns[i]}: ${answer.error}`);
    const regex = new RegExp(patterns[i], 'u');
    requests[i].texts.forEach((text, j) =>
      assert.equal(answer.matches[j], regex.test(text), `/${patterns[i]}/u on ${JSON.stringify(text)}`));
  });
});
