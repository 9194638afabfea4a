// Constrained decoding at a last stage in a `troupe node` process, which reads its
// tokenizer beside its start rather than before it (so a restarted node is back sooner):
// json_schema answers of a random-weight model hold their schema (ajv checks them), before
// and right after that process is killed and started again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertValid } from '../gateway/forced_tool_calls.mjs';
import { makeTinyModel } from '../gateway/server_process.mjs';
import { clientOf, nodesOf, startCluster, writeConf } from './cluster_process.mjs';

let conf, cluster;

// The tiny model's two layers: the first in the head, the last (which samples) in second.
const nodes = `[node.head]
address = 127.0.0.1
port = 0

[node.second]
address = 127.0.0.1
port = 0

[replica.main]
stages = head:0-0, second:1-1
`;

before(async () => {
  const work = mkdtempSync(join(tmpdir(), 'troupe_constrained_'));
  conf = writeConf(join(work, 'cluster.conf'), makeTinyModel(), nodes);
  cluster = await startCluster(conf);
});

after(async () => {
  if (!cluster) return;
  const { code } = await cluster.stop();
  assert.equal(code, 0, 'SIGTERM stops the head cleanly: ' + cluster.stderr());
});

const schema = { type: 'object', properties: { ok: { type: 'boolean' }, n: { enum: [1, 2, 3] },
  name: { type: 'string', maxLength: 8 } }, required: ['ok', 'n', 'name'], additionalProperties: false };

async function checkAnswers(what) {
  const answers = await Promise.all([1, 2, 3, 4].map((seed) => clientOf(cluster).completions.create({
    model: 'fixture', prompt: 'Answer:', max_tokens: 200, seed,
    response_format: { type: 'json_schema', json_schema: { name: 'a', schema, strict: true } } })));
  for (const r of answers) {
    assert.equal(r.choices[0].finish_reason, 'stop', what);
    assertValid(schema, JSON.parse(r.choices[0].text), what);
  }
}

test('json_schema answers from a node process validate', () => checkAnswers('first start'));

test('and so do those of its process started again after a kill, asked as soon as it is back', async () => {
  const [old] = nodesOf(conf, 'second');
  process.kill(old, 'SIGKILL');
  const deadline = Date.now() + 60000;
  for (;;) {
    const pids = nodesOf(conf, 'second');
    if (pids.length === 1 && pids[0] !== old && (await fetch(cluster.baseURL + '/health')).status === 200) break;
    assert.ok(Date.now() < deadline, `node second was not back within 60 s: ${cluster.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  await checkAnswers('after the restart');
});
