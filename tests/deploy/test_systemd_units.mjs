// deploy/systemd: `systemd-analyze verify` passes on every unit (a copy whose ExecStart
// path is the built troupe, which verify requires to exist), the units keep the settings
// docs/deploy.md promises, and troupe.service's own command lines, expanded from the shipped
// troupe.env as systemd expands them, start troupe, wait for /health and stop it cleanly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binary, sourceDir, makeTinyModel } from '../gateway/server_process.mjs';
import { freePort, render } from './deploy_support.mjs';

const unitDir = join(sourceDir, 'deploy/systemd');
const units = readdirSync(unitDir).filter((f) => f.endsWith('.service')).sort();
const installed = '/usr/local/bin/troupe';

// [section] -> key -> values (a key may repeat).
function parseUnit(text) {
  const out = {};
  let section = null;
  for (const line of text.split('\n')) {
    if (/^\s*(#|;|$)/.test(line)) continue;
    const s = line.match(/^\[(.+)\]$/);
    if (s) { section = out[s[1]] = {}; continue; }
    const [, key, value] = line.match(/^(\w+)=(.*)$/);
    (section[key] ??= []).push(value);
  }
  return out;
}

function parseEnv(text) {
  const env = {};
  for (const line of text.split('\n')) {
    if (/^\s*(#|$)/.test(line)) continue;
    const [, key, value] = line.match(/^([A-Z_][A-Z0-9_]*)=(.*)$/);
    env[key] = value;
  }
  return env;
}

// systemd's expansion of an Exec line: ${VAR} is one word, $VAR is split at whitespace.
function expand(line, env) {
  return line.split(/\s+/).filter(Boolean).flatMap((word) => {
    const whole = word.match(/^\$([A-Z_][A-Z0-9_]*)$/);
    if (whole) return (env[whole[1]] ?? '').split(/\s+/).filter(Boolean);
    return [word.replace(/\$\{([A-Z_][A-Z0-9_]*)\}/g, (_, k) => {
      assert.ok(k in env, `${k} is not set`);
      return env[k];
    })];
  });
}

test('systemd-analyze verify passes on every unit', () => {
  assert.deepEqual(units, ['troupe-cluster.service', 'troupe-node@.service', 'troupe.service']);
  const dir = mkdtempSync(join(tmpdir(), 'troupe_units_'));
  for (const u of units) {
    const text = readFileSync(join(unitDir, u), 'utf8');
    assert.ok(text.includes(`ExecStart=${installed} `), `${u} runs ${installed}`);
    writeFileSync(join(dir, u), text.replaceAll(installed, binary));
  }
  // A template is verified as an instance of it.
  const names = ['troupe.service', 'troupe-cluster.service', 'troupe-node@second.service'];
  const r = spawnSync('systemd-analyze', ['verify', ...names.map((n) => `./${n}`)], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '', 'no warnings (an unknown key or a bad value is only a warning)');
});

test('the units restart on failure, log to the journal, read the env file, stop with SIGTERM and wait for /health', () => {
  const env = parseEnv(readFileSync(join(unitDir, 'troupe.env'), 'utf8'));
  for (const u of units) {
    const unit = parseUnit(readFileSync(join(unitDir, u), 'utf8'));
    const s = unit.Service;
    assert.deepEqual(s.Restart, [u.startsWith('troupe-node@') ? 'always' : 'on-failure'], u);
    assert.ok(Number(s.RestartSec[0]) >= 1, u);
    assert.deepEqual(s.RestartPreventExitStatus, ['2'], u);
    assert.deepEqual(s.EnvironmentFile, ['/etc/troupe/troupe.env'], u);
    assert.deepEqual(s.StandardOutput, ['journal'], u);
    assert.deepEqual(s.StandardError, ['journal'], u);
    assert.deepEqual(s.KillSignal, ['SIGTERM'], u);
    assert.deepEqual(s.KillMode, ['mixed'], u);
    // serve and cluster up drain for up to 30 s, a node stops its stages within 10 s.
    const grace = u.startsWith('troupe-node@') ? 10 : 30;
    assert.ok(Number(s.TimeoutStopSec[0]) > grace, `${u}: stopping takes up to ${grace} s`);
    if (!u.startsWith('troupe-node@')) assert.match(s.ExecStartPost[0], /^\/usr\/local\/bin\/troupe health --url http:\/\/\$\{TROUPE_HOST\}:\$\{TROUPE_PORT\} --wait /);
    for (const line of [...s.ExecStart, ...(s.ExecStartPost ?? [])])
      for (const [, braced, bare] of line.matchAll(/\$\{(\w+)\}|\$(\w+)/g))
        assert.ok((braced ?? bare) in env, `${u} uses ${braced ?? bare}, which troupe.env does not set`);
  }
});

test("troupe.service's ExecStart and ExecStartPost, from troupe.env, serve and become ready; SIGTERM ends it with 0", async () => {
  const port = await freePort();
  const modelDir = makeTinyModel();
  const env = parseEnv(render('systemd/troupe.env', [
    ['TROUPE_MODEL=/var/lib/troupe/models/Qwen3-30B-A3B', `TROUPE_MODEL=${modelDir}`],
    ['TROUPE_PORT=8000', `TROUPE_PORT=${port}`],
    ['--device cuda', '--device cpu'],
  ]));
  const s = parseUnit(readFileSync(join(unitDir, 'troupe.service'), 'utf8')).Service;
  const start = expand(s.ExecStart[0], env), post = expand(s.ExecStartPost[0], env);
  assert.equal(start[0], installed);
  const child = spawn(binary, start.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => { log += d; });
  child.stderr.on('data', (d) => { log += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  try {
    const ready = await new Promise((resolve) => {
      const p = spawn(binary, post.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      p.stderr.on('data', (d) => { err += d; });
      p.on('exit', (code) => resolve({ code, err }));
    });
    assert.equal(ready.code, 0, ready.err + log);
    assert.match(log, /troupe: warm-up: 8 requests in .*\/health is ready/);
    const models = await (await fetch(`http://127.0.0.1:${port}/v1/models`)).json();
    assert.equal(models.data[0].id, 'qwen3-30b-a3b');
  } finally {
    child.kill(s.KillSignal[0]);
  }
  const t0 = Date.now();
  const { code } = await exited;
  assert.equal(code, 0, log);
  assert.ok(Date.now() - t0 < Number(s.TimeoutStopSec[0]) * 1000);
});
