// The control links of a cluster (CAF) are mutual TLS with the certificates of
// `troupe cluster certs`, and a node listens only on its address in cluster.conf. Random
// bytes, oversized frame headers and plaintext BASP at the nodes' control ports (10,000
// connections a port) and UCX ports (2,000), under streaming load, kill no process and
// lose no request; a plaintext peer never reaches BASP; a node whose certificate
// another CA signed, or that speaks plaintext, is refused by the head with a clear error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binary } from '../gateway/server_process.mjs';
import { clientOf, fixtureModel, golden, greedy, nodesOf, startCluster, startNodeProcess, threeNodes,
         writeConf } from './cluster_process.mjs';

let work, modelDir, cluster, client, conf;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'troupe_control_tls_'));
  modelDir = fixtureModel();
  conf = writeConf(join(work, 'cluster.conf'), modelDir, threeNodes());
  cluster = await startCluster(conf);
  client = clientOf(cluster);
});

after(async () => {
  const { code } = await cluster.stop();
  assert.equal(code, 0, cluster.stderr());
});

// Each node the head started, with its pid and control port, from the head's log.
function startedNodes() {
  return [...cluster.stderr().matchAll(/troupe cluster up: node (\w+) \(pid (\d+)\): control on 127\.0\.0\.1:(\d+)/g)]
    .map((m) => ({ name: m[1], pid: Number(m[2]), port: Number(m[3]) }));
}

// The TCP ports process `pid` listens on, with their addresses, from /proc.
function listening(pid) {
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = readlinkSync(`/proc/${pid}/fd/${fd}`).match(/^socket:\[(\d+)\]$/);
      if (m) inodes.add(m[1]);
    } catch {}  // closed meanwhile
  }
  const found = [];
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9])) continue;  // 0A: LISTEN
    const [ip, port] = f[1].split(':');
    found.push({ address: Buffer.from(ip, 'hex').reverse().join('.'), port: parseInt(port, 16) });
  }
  return found;
}

// What a stranger sends: random bytes, a frame header announcing a 4 GiB payload, a TLS
// record header announcing more than it carries, or nothing at all.
function garbage(i) {
  switch (i % 4) {
    case 0: return randomBytes(1 + (i * 7919) % 512);
    case 1: {
      const header = randomBytes(32);
      header.writeUInt32BE(0xffffffff, 4);
      return header;
    }
    case 2: return Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0xff, 0xff]), randomBytes(64)]);
    default: return Buffer.alloc(0);
  }
}

// Opens `count` connections to port, `parallel` at a time, each sending garbage(i) and
// closing; resolves when all are closed (or after the time bound).
async function flood(port, count, parallel = 64, boundMs = 120000) {
  const deadline = Date.now() + boundMs;
  let next = 0;
  const one = (i) => new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.setTimeout(5000, () => s.destroy());
    s.on('connect', () => s.end(garbage(i)));
    s.on('error', () => {});
    s.on('close', resolve);
    s.resume();
  });
  const worker = async () => {
    while (next < count && Date.now() < deadline) await one(next++);
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return next;
}

test('the nodes listen on their configured address (127.0.0.1) only, their UCX links included', () => {
  for (const n of startedNodes()) {
    const ports = listening(n.pid);
    assert.ok(ports.length >= 2, `node ${n.name} listens on ${JSON.stringify(ports)}: its control port and UCX's`);
    assert.ok(ports.some((p) => p.port === n.port));
    for (const p of ports) assert.equal(p.address, '127.0.0.1', `node ${n.name}: ${JSON.stringify(p)}`);
  }
});

test('10,000 garbage connections to each node\'s control port, 2,000 to each UCX port, under load: no process dies, nothing lost', async () => {
  const nodes = startedNodes();
  assert.deepEqual(nodes.map((n) => n.name).sort(), ['second', 'third']);
  const targets = nodes.flatMap((n) => listening(n.pid).map((p) => ({ port: p.port, count: p.port === n.port ? 10000 : 2000 })));
  let flooding = true;
  const served = [];
  const load = (async () => {
    for (let i = 0; flooding && i < 200; ++i) served.push(...await Promise.all([0, 1].map(() => greedy(client, golden.prompt, 4))));
  })();
  const sent = await Promise.all(targets.map((t) => flood(t.port, t.count)));
  flooding = false;
  await load;
  assert.deepEqual(sent, targets.map((t) => t.count), 'every connection was made within the time bound');
  for (const r of served) assert.deepEqual(r.ids, golden.greedy.slice(0, 4));
  assert.ok(served.length >= 2, 'completions ran during the flood');
  assert.deepEqual(nodesOf(conf).sort(), nodes.map((n) => n.pid).sort(), 'no node process died or was restarted');
  assert.doesNotMatch(cluster.stderr(), /lost node|starting it again/);
  assert.equal((await fetch(cluster.baseURL + '/health')).status, 200);
});

test('a plaintext peer never reaches BASP: no handshake for it, and its bytes end the connection', async () => {
  const [node] = startedNodes();
  const { heard, closed } = await new Promise((resolve) => {
    let heard = 0;
    const s = connect(node.port, '127.0.0.1');
    s.on('data', (d) => { heard += d.length; });
    s.on('error', () => {});
    // A BASP server speaks first; a TLS server waits for the client's hello.
    setTimeout(() => s.write(Buffer.concat([Buffer.alloc(4), randomBytes(28)])), 500);
    const bound = setTimeout(() => { s.destroy(); resolve({ heard, closed: false }); }, 10000);
    s.on('close', () => { clearTimeout(bound); resolve({ heard, closed: true }); });
  });
  assert.equal(heard, 0, 'the node answered a plaintext peer');
  assert.ok(closed, 'the node kept a plaintext peer\'s connection open');
  assert.deepEqual(nodesOf(conf, node.name), [node.pid]);
});

// A `troupe node` of another cluster.conf, at a port of its own: the head's cluster.conf
// names it at that port.
async function strangerNode(dir, options) {
  mkdirSync(dir, { recursive: true });
  const { child, port } = await startNodeProcess(writeConf(join(dir, 'node.conf'), modelDir, threeNodes(), options),
                                                 'second');
  return { stranger: child, port };
}

function headFor(port) {
  const started = Date.now();
  const r = spawnSync(binary, ['cluster', 'up', writeConf(join(work, `head_${port}.conf`), modelDir,
                                                          threeNodes({ second: port })), '--port', '0'],
                      { encoding: 'utf8', timeout: 90000 });
  return { ...r, seconds: (Date.now() - started) / 1000 };
}

test('a node whose certificate another CA signed is refused with a clear error, at once', async () => {
  const { stranger, port } = await strangerNode(join(work, 'foreign'));
  try {
    const r = headFor(port);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`node second: 127\\.0\\.0\\.1:${port} presents a certificate this cluster's CA ` +
                                      `\\(.*certs/ca\\.crt\\) did not sign`));
    assert.ok(r.seconds < 30, `refused after ${r.seconds} s, not at the startup timeout`);
  } finally {
    stranger.kill('SIGTERM');
  }
});

test('a node speaking plaintext (insecure = yes) is refused by a TLS head', async () => {
  const { stranger, port } = await strangerNode(join(work, 'plaintext'), { tls: false });
  try {
    const r = headFor(port);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`node second: 127\\.0\\.0\\.1:${port} does not speak TLS`));
  } finally {
    stranger.kill('SIGTERM');
  }
});
