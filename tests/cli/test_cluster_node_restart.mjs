// A node process of a running cluster killed with SIGKILL: `troupe cluster up` starts it
// again and gives it its part back, and the streams that were running when it died go on
// where they were (their sequences re-prefilled from prompt and tokens already sent), so
// each ends with exactly the tokens of a run without the kill: none lost, none twice.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientOf, fixtureModel, nodesOf, startCluster, streamsUnderWay, threeNodes, writeConf } from './cluster_process.mjs';

let conf, cluster, client;

before(async () => {
  const work = mkdtempSync(join(tmpdir(), 'troupe_restart_'));
  conf = writeConf(join(work, 'cluster.conf'), fixtureModel(), threeNodes());
  cluster = await startCluster(conf);
  client = clientOf(cluster);
});

after(async () => {
  if (!cluster) return;
  const { code } = await cluster.stop();
  assert.equal(code, 0, 'SIGTERM stops the head cleanly: ' + cluster.stderr());
  assert.deepEqual(nodesOf(conf), [], 'the node processes, restarted ones too, end with the head');
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Greedy token ids of one streamed completion, in the order the chunks brought them; calls
// `first` once the first token is in.
async function streamed(prompt, maxTokens, first = () => {}) {
  const stream = await client.completions.create({ model: 'fixture', prompt, max_tokens: maxTokens, temperature: 0,
    logprobs: 0, return_tokens_as_token_ids: true, ignore_eos: true, stream: true });
  const ids = [];
  let finish = null;
  for await (const chunk of stream)
    for (const c of chunk.choices) {
      for (const t of c.logprobs?.tokens ?? []) ids.push(Number(t.slice('token_id:'.length)));
      if (ids.length > 0) first();
      if (c.finish_reason) finish = c.finish_reason;
    }
  return { ids, finish };
}

async function recoveries() {
  const metrics = await (await fetch(cluster.baseURL + '/metrics')).text();
  return Number(metrics.match(/^troupe_recoveries_total (\d+)/m)?.[1] ?? 0);
}

// Waits until node `name` runs as another process than `old` and every part is ready.
async function restarted(name, old) {
  const deadline = Date.now() + 60000;
  for (;;) {
    const pids = nodesOf(conf, name);
    if (pids.length === 1 && pids[0] !== old && (await fetch(cluster.baseURL + '/health')).status === 200) return pids[0];
    assert.ok(Date.now() < deadline, `node ${name} was not back within 60 s: ${cluster.stderr()}`);
    await sleep(100);
  }
}

// The sockets a process holds besides its standard streams (which a node shares with the
// head on purpose), as 'socket:[inode]'.
function socketsOf(pid) {
  return readdirSync(`/proc/${pid}/fd`).filter((fd) => Number(fd) > 2).map((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      return '';  // closed meanwhile
    }
  }).filter((link) => link.startsWith('socket:'));
}

const prompts = Array.from({ length: 8 }, (_, i) => Array.from({ length: 6 + 5 * i }, (_, j) => (i * 29 + j * 13) % 250));
const maxTokens = 400;

for (const victim of ['second', 'third']) {
  test(`node ${victim} killed mid-stream: started again, every stream ends with the fault-free tokens`, async () => {
    const clean = await Promise.all(prompts.map((p) => streamed(p, maxTokens)));
    const before = await recoveries();
    const [old] = nodesOf(conf, victim);
    // Killed once every stream has its first token: each is then mid-way.
    const { runs, running } = streamsUnderWay(prompts, (p, onToken) => streamed(p, maxTokens, onToken));
    await running;
    process.kill(old, 'SIGKILL');
    const faulty = await Promise.all(runs);
    const pid = await restarted(victim, old);
    assert.notEqual(pid, old);
    // The head forked it while holding its links to the other node: a copy kept there would
    // keep open what the head closes, and this node's next death would reset that link.
    const heads = new Set(socketsOf(cluster.pid));
    assert.deepEqual(socketsOf(pid).filter((s) => heads.has(s)), [], `node ${victim} holds sockets of the head`);
    faulty.forEach((r, i) => {
      assert.equal(r.finish, 'length', `stream ${i} ended with ${r.finish}`);
      assert.deepEqual(r.ids, clean[i].ids, `stream ${i}: its tokens differ from the fault-free run's`);
    });
    assert.ok((await recoveries()) > before, 'the kill landed while the streams ran (their sequences were re-run)');
    assert.match(cluster.stderr(), new RegExp(`node ${victim} was killed by .*; starting it again`));
    assert.match(cluster.stderr(), new RegExp(`node ${victim} is back after \\d+ ms`));
  });
}

// Restarting a node must not wait for a peer that is down too: both die at once, each comes
// back, in whatever order the head restarts them, and the streams go on.
test('both nodes killed at once: each started again, every stream ends with the fault-free tokens', async () => {
  const clean = await Promise.all(prompts.map((p) => streamed(p, maxTokens)));
  const [second] = nodesOf(conf, 'second');
  const [third] = nodesOf(conf, 'third');
  const { runs, running } = streamsUnderWay(prompts, (p, onToken) => streamed(p, maxTokens, onToken));
  await running;
  process.kill(second, 'SIGKILL');
  process.kill(third, 'SIGKILL');
  const faulty = await Promise.all(runs);
  assert.notEqual(await restarted('second', second), second);
  assert.notEqual(await restarted('third', third), third);
  faulty.forEach((r, i) => {
    assert.equal(r.finish, 'length', `stream ${i} ended with ${r.finish}`);
    assert.deepEqual(r.ids, clean[i].ids, `stream ${i}: its tokens differ from the fault-free run's`);
  });
});
