// deploy/prometheus/prometheus.yml (its target substituted) in a real Prometheus scraping a
// real troupe: the request counter is there after traffic, and every query of the Grafana
// dashboard (deploy/grafana/troupe.json) runs and names only metrics troupe exports.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { makeTinyModel, startServer, sourceDir } from '../gateway/server_process.mjs';
import { freePort, render, startPrometheus, sleep } from './deploy_support.mjs';

let server, prometheus, promPort, dir;

async function query(expr) {
  const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = await r.json();
  assert.equal(body.status, 'success', `${expr}: ${JSON.stringify(body)}`);
  return body.data.result;
}

before(async () => {
  server = await startServer(makeTinyModel(), ['--max-num-seqs', '8']);
  dir = mkdtempSync(join(tmpdir(), 'troupe_prometheus_'));
  // Traffic first: the first scrape, within the shipped 10 s interval, sees it all.
  const client = new OpenAI({ baseURL: server.baseURL + '/v1', apiKey: 'unused', maxRetries: 0 });
  for (let i = 0; i < 3; ++i)
    await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: `Hello ${i}` }],
      max_tokens: 8, ignore_eos: true });
  const stream = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 8, ignore_eos: true, stream: true });
  for await (const _ of stream);
  promPort = await freePort();
  prometheus = await startPrometheus(dir, render('prometheus/prometheus.yml',
    [["targets: ['127.0.0.1:8000']", `targets: ['127.0.0.1:${server.port}']`]]), promPort);
});

after(async () => {
  if (prometheus) await prometheus.stop();
  if (server) await server.stop();
});

test('promtool accepts the shipped scrape config and the rendered one', () => {
  for (const file of [join(sourceDir, 'deploy/prometheus/prometheus.yml'), prometheus.file]) {
    const r = spawnSync('promtool', ['check', 'config', file], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  }
});

test('after traffic, Prometheus has the request count of the chat endpoint from troupe', async () => {
  const expr = 'troupe_requests_total{job="troupe",endpoint="/v1/chat/completions",status="200"}';
  let result = [];
  for (const deadline = Date.now() + 40000; Date.now() < deadline; await sleep(500)) {
    result = await query(expr);
    if (result.length) break;
  }
  assert.equal(result.length, 1, `no ${expr} after 40 s: ${prometheus.log().slice(-2000)}`);
  assert.equal(result[0].metric.instance, `127.0.0.1:${server.port}`);
  assert.equal(Number(result[0].value[1]), 4);
  const up = await query('up{job="troupe"}');
  assert.equal(Number(up[0].value[1]), 1);
});

test('every dashboard query runs in Prometheus and names only metrics troupe exports', async () => {
  const dashboard = JSON.parse(readFileSync(join(sourceDir, 'deploy/grafana/troupe.json'), 'utf8'));
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
  assert.ok(exprs.length >= 20, `${exprs.length} queries`);
  const exported = new Set([...(await (await fetch(server.baseURL + '/metrics')).text())
    .matchAll(/^# TYPE (\S+) (\w+)$/gm)].flatMap(([, name, type]) =>
    type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name]));
  const panelsOf = new Set();
  for (const { panel, expr } of exprs) {
    for (const [name] of expr.matchAll(/\btroupe_[a-z_]+\b/g)) {
      assert.ok(exported.has(name), `panel "${panel}": ${name} is not in troupe's /metrics`);
      panelsOf.add(name.replace(/_(bucket|sum|count)$/, ''));
    }
    // Grafana's variables, as it would fill them in.
    await query(expr.replaceAll('$__rate_interval', '1m').replaceAll('$instance', '.*'));
  }
  // The panels: traffic and errors, TTFT and time per token, running and waiting,
  // KV usage, prefix-cache hits, per-stage health and restarts.
  for (const m of ['troupe_requests_total', 'troupe_time_to_first_token_seconds', 'troupe_time_per_output_token_seconds',
    'troupe_num_requests_running', 'troupe_num_requests_waiting', 'troupe_kv_cache_usage_ratio',
    'troupe_prefix_cache_hit_ratio', 'troupe_component_ready', 'troupe_component_restarts'])
    assert.ok(panelsOf.has(m), `no panel shows ${m}`);
  // The instance variable's query finds this troupe.
  const instances = await (await fetch(`http://127.0.0.1:${promPort}/api/v1/label/instance/values?match[]=troupe_requests_total`)).json();
  assert.deepEqual(instances.data, [`127.0.0.1:${server.port}`]);
  const ttft = await query('histogram_quantile(0.5, sum by (le) (troupe_time_to_first_token_seconds_bucket{job="troupe"}))');
  assert.ok(Number(ttft[0].value[1]) > 0);
});
