// What the deploy/ tests share: free local ports, rendering a shipped file with the few
// substitutions a test needs (each must be found, so the rest of the file is what users
// install), real nginx and Prometheus processes in a temp dir, and an HTTPS fetch for the
// openai SDK that trusts the test's own certificate.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import https from 'node:https';
import net from 'node:net';
import { Readable } from 'node:stream';
import assert from 'node:assert/strict';
import { sourceDir } from '../gateway/server_process.mjs';

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// deploy/PATH with every [from, to] replaced; each `from` must occur in the file.
export function render(path, replacements) {
  let text = readFileSync(join(sourceDir, 'deploy', path), 'utf8');
  for (const [from, to] of replacements) {
    assert.ok(text.includes(from), `deploy/${path} has no "${from}"`);
    text = text.split(from).join(to);
  }
  return text;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitForPort(port, child, what, patience = 10000) {
  const deadline = Date.now() + patience;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
    const open = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1');
      c.on('connect', () => { c.destroy(); resolve(true); });
      c.on('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port}`);
    await sleep(50);
  }
}

function keep(child) {
  let log = '';
  child.stdout.on('data', (d) => { log += d; });
  child.stderr.on('data', (d) => { log += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, log: () => log, async stop(signal = 'SIGTERM') { if (child.exitCode === null) child.kill(signal); return exited; } };
}

// nginx in the foreground, its pid, logs and temp files in `dir`, with `site` (a file for
// the http block, as deploy/nginx/troupe.conf) included; resolves once `port` listens.
export async function startNginx(dir, site, port) {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);  // nginx's workers (nobody, when the test runs as root) read the password file
  writeFileSync(join(dir, 'troupe.conf'), site);
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
events { worker_connections 256; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  include ${dir}/troupe.conf;
}
`);
  const check = spawnSync('nginx', ['-t', '-p', dir, '-c', conf, '-e', join(dir, 'error.log')], { encoding: 'utf8' });
  assert.equal(check.status, 0, `nginx -t: ${check.stderr}`);
  const n = keep(spawn('nginx', ['-p', dir, '-c', conf, '-e', join(dir, 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] }));
  await waitForPort(port, n.child, 'nginx');
  return n;
}

// Prometheus with `config` (YAML text), its data in `dir`; resolves once it is ready.
export async function startPrometheus(dir, config, port) {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'prometheus.yml');
  writeFileSync(file, config);
  const p = keep(spawn('prometheus', [`--config.file=${file}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] }));
  await waitForPort(port, p.child, 'prometheus', 20000);
  for (const deadline = Date.now() + 20000; ;) {
    const r = await fetch(`http://127.0.0.1:${port}/-/ready`).catch(() => null);
    if (r && r.status === 200) break;
    if (Date.now() > deadline) throw new Error(`prometheus is not ready: ${p.log()}`);
    await sleep(100);
  }
  return { ...p, file };
}

// A self-signed certificate for 127.0.0.1 and its key, as openssl writes them.
export function makeCertificate(dir) {
  const cert = join(dir, 'troupe.crt'), key = join(dir, 'troupe.key');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert,
    '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return { cert, key, pem: readFileSync(cert) };
}

// An htpasswd line as docs/deploy.md says to make one: `openssl passwd -apr1`.
export function htpasswdLine(user, password) {
  const r = spawnSync('openssl', ['passwd', '-apr1', password], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return `${user}:${r.stdout.trim()}\n`;
}

// fetch over node:https that trusts `ca` alone (the SDK's `fetch` option), so the tests
// verify the proxy's certificate instead of turning verification off.
export function fetchTrusting(ca) {
  return (input, init = {}) => new Promise((resolve, reject) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries());
    const req = https.request(url, { method: init.method ?? 'GET', headers, ca }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) for (const one of [].concat(v)) h.append(k, one);
      const noBody = [101, 204, 205, 304].includes(res.statusCode);
      resolve(new Response(noBody ? null : Readable.toWeb(res), { status: res.statusCode, statusText: res.statusMessage, headers: h }));
    });
    req.on('error', reject);
    init.signal?.addEventListener('abort', () => req.destroy(new Error('aborted')));
    req.end(init.body ?? undefined);
  });
}

// The hang drill (base/hang_drill_signal.hpp): troupe's stages block their next step for
// `ms`, so a stream goes silent that long in the middle.
export function hangStages(pid, ms) {
  const r = spawnSync('kill', ['-s', 'USR1', '-q', String(ms), String(pid)], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}
