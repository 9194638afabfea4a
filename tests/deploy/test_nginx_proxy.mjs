// deploy/nginx/troupe.conf as users install it (only its ports, upstream, certificate and
// password-file paths substituted), in a real nginx in front of a real troupe, driven by
// the official openai SDK over TLS: streams pass chunk by chunk, basic auth and API keys
// gate it, and a stream that goes silent mid-way is not cut by a proxy timeout.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import https from 'node:https';
import OpenAI from 'openai';
import { makeTinyModel, startServer } from '../gateway/server_process.mjs';
import { freePort, render, startNginx, makeCertificate, htpasswdLine, fetchTrusting, hangStages } from './deploy_support.mjs';

const apiKey = 'sk-troupe-test-key';
let server, dir, tls, proxies = {}, ports = {};

// The shipped site, for this test's ports and files; `extra` replaces more (the controls).
function site(httpPort, httpsPort, extra = []) {
  return render('nginx/troupe.conf', [
    ['server 127.0.0.1:8000;', `server 127.0.0.1:${server.port};`],
    ['listen 80;', `listen 127.0.0.1:${httpPort};`],
    ['listen 443 ssl http2;', `listen 127.0.0.1:${httpsPort} ssl http2;`],
    ['/etc/nginx/tls/troupe.crt', tls.cert],
    ['/etc/nginx/tls/troupe.key', tls.key],
    ['/etc/nginx/troupe.htpasswd', join(dir, 'htpasswd')],
    ['/etc/nginx/troupe-api-keys.conf', join(dir, 'api-keys.conf')],
    ...extra,
  ]);
}

async function startProxy(name, extra) {
  const httpPort = await freePort(), httpsPort = await freePort();
  proxies[name] = await startNginx(join(dir, name), site(httpPort, httpsPort, extra), httpsPort);
  ports[name] = { http: httpPort, https: httpsPort };
}

function client(name, auth) {
  return new OpenAI({ baseURL: `https://127.0.0.1:${ports[name].https}/v1`, maxRetries: 0, timeout: 60000,
    fetch: fetchTrusting(tls.pem), ...auth });
}
const basic = (user, password) => ({ apiKey: 'unused',
  defaultHeaders: { Authorization: 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64') } });

// A streamed chat of `maxTokens` tokens; `onFirst` runs when the first content arrives.
// Returns each chunk's arrival time (ms after the request), the finish reason and usage.
async function timedStream(c, maxTokens, onFirst = () => {}) {
  const start = Date.now();
  const stream = await c.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Count.' }],
    max_tokens: maxTokens, ignore_eos: true, temperature: 0, stream: true, stream_options: { include_usage: true } });
  const arrivals = [];
  let finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta?.content) {
        if (arrivals.length === 0) onFirst();
        arrivals.push(Date.now() - start);
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  return { arrivals, finish, usage };
}

before(async () => {
  server = await startServer(makeTinyModel(), ['--max-num-seqs', '8']);
  dir = mkdtempSync(join(tmpdir(), 'troupe_nginx_'));
  chmodSync(dir, 0o755);
  tls = makeCertificate(dir);
  writeFileSync(join(dir, 'htpasswd'), htpasswdLine('alice', 'right horse'));
  chmodSync(join(dir, 'htpasswd'), 0o644);
  writeFileSync(join(dir, 'api-keys.conf'), `"Bearer ${apiKey}" 1;\n`);
  await startProxy('shipped', []);
  // Controls: the shipped site with one setting as nginx's defaults have it, to show that
  // the tests below would catch its absence.
  await startProxy('buffered', [['proxy_buffering off;', 'proxy_buffering on;']]);
  await startProxy('short_timeout', [['proxy_read_timeout 3600s;', 'proxy_read_timeout 1s;']]);
});

after(async () => {
  for (const p of Object.values(proxies)) await p.stop('SIGQUIT');
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0);
  }
});

test('plain HTTP is redirected to HTTPS', async () => {
  const r = await fetch(`http://127.0.0.1:${ports.shipped.http}/v1/models`, { redirect: 'manual' });
  assert.equal(r.status, 301);
  assert.match(r.headers.get('location'), /^https:\/\/127\.0\.0\.1(:\d+)?\/v1\/models$/);
});

test('a streamed chat arrives through the proxy chunk by chunk: the first chunk long before the last', async () => {
  // The stages stall 1.5 s once the first chunk is in: a proxy that buffered would hold
  // that chunk until after the stall.
  const c = client('shipped', basic('alice', 'right horse'));
  const { arrivals, finish, usage } = await timedStream(c, 200, () => hangStages(server.pid, 1500));
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 200);
  assert.ok(arrivals.length >= 100, `${arrivals.length} content chunks`);
  const first = arrivals[0], last = arrivals[arrivals.length - 1];
  assert.ok(last - first >= 1200, `first chunk at ${first} ms, last at ${last} ms`);
  console.log(`${arrivals.length} chunks through the proxy, the first at ${first} ms, the last at ${last} ms`);
});

test('each SSE event leaves the proxy as troupe writes it; with proxy_buffering on they come in a few bursts', async () => {
  const distinct = async (name) => {
    const { arrivals, finish } = await timedStream(client(name, basic('alice', 'right horse')), 300);
    assert.equal(finish, 'length');
    return new Set(arrivals).size;  // milliseconds at which content chunks arrived
  };
  const shipped = await distinct('shipped'), buffered = await distinct('buffered');
  console.log(`300 tokens arrived at ${shipped} distinct milliseconds through the shipped site, ${buffered} with proxy_buffering on`);
  assert.ok(shipped >= 2 * buffered, `${shipped} against ${buffered}`);
});

test('basic auth: a wrong password and no credentials are refused with 401', async () => {
  await assert.rejects(client('shipped', basic('alice', 'wrong horse')).models.list(), (e) => e.status === 401);
  await assert.rejects(client('shipped', basic('mallory', 'right horse')).models.list(), (e) => e.status === 401);
  const r = await new Promise((resolve, reject) => {
    https.get({ host: '127.0.0.1', port: ports.shipped.https, path: '/v1/models', ca: tls.pem }, (res) => {
      res.resume();
      resolve(res);
    }).on('error', reject);
  });
  assert.equal(r.statusCode, 401);
  assert.match(r.headers['www-authenticate'], /^Basic realm="troupe"/);
  const models = await client('shipped', basic('alice', 'right horse')).models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['tiny']);
});

test('an OpenAI client with a listed API key gets in; an unlisted key does not', async () => {
  const ok = await client('shipped', { apiKey }).chat.completions.create({ model: 'tiny',
    messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, ignore_eos: true });
  assert.equal(ok.usage.completion_tokens, 4);
  await assert.rejects(client('shipped', { apiKey: 'sk-someone-else' }).models.list(), (e) => e.status === 401);
});

test('/health answers without credentials, for load balancers', async () => {
  const status = await new Promise((resolve, reject) => {
    https.get({ host: '127.0.0.1', port: ports.shipped.https, path: '/health', ca: tls.pem }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', reject);
  });
  assert.equal(status, 200);
});

test('a generation that goes silent for 2.5 s is not cut; with a 1 s proxy_read_timeout it would be', async () => {
  // Long enough that the hang, set at the first token, lands mid-stream on a loaded machine.
  const shipped = await timedStream(client('shipped', basic('alice', 'right horse')), 1000,
    () => hangStages(server.pid, 2500));
  assert.equal(shipped.finish, 'length');
  assert.equal(shipped.usage.completion_tokens, 1000);
  const gaps = shipped.arrivals.slice(1).map((t, i) => t - shipped.arrivals[i]);
  assert.ok(Math.max(...gaps) >= 2000, `longest silence ${Math.max(...gaps)} ms`);
  // The control: the same stream through a proxy whose read timeout is shorter than the
  // silence ends early, without a finish reason (or with an error).
  let cut;
  try {
    const r = await timedStream(client('short_timeout', basic('alice', 'right horse')), 1000,
      () => hangStages(server.pid, 2500));
    cut = r.finish === null;
  } catch {
    cut = true;
  }
  assert.ok(cut, 'a 1 s proxy_read_timeout cuts a stream silent for 2.5 s');
});
