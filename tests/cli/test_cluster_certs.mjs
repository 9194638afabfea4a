// `troupe cluster certs FILE` makes the cluster's CA and a certificate and key per node,
// checked here with the openssl command line: each node's certificate verifies against
// the CA, is for TLS clients and servers, names the node and its address; keys are the
// owner's only. A second run keeps what exists and adds a new node's. `troupe node` with
// missing or mismatched files exits 2 naming the file.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binary } from '../gateway/server_process.mjs';
import { fixtureModel, threeNodes, writeConf } from './cluster_process.mjs';

let work, conf, certs;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'troupe_certs_'));
  conf = writeConf(join(work, 'cluster.conf'), fixtureModel(), threeNodes(), { tls: false });
  writeFileSync(conf, readFileSync(conf, 'utf8').replace('insecure = yes', 'certs = tls'));
  certs = join(work, 'tls');
});

const openssl = (...args) => execFileSync('openssl', args, { encoding: 'utf8' });
const troupe = (...args) => spawnSync(binary, args, { encoding: 'utf8', timeout: 30000 });

test('a CA and a certificate per node, each verified by openssl against the CA', () => {
  const r = troupe('cluster', 'certs', conf);
  assert.equal(r.status, 0, r.stderr);
  for (const f of ['ca.crt', 'ca.key', 'head.crt', 'head.key', 'second.crt', 'second.key', 'third.crt', 'third.key'])
    assert.match(r.stdout, new RegExp(`wrote .*tls/${f.replace('.', '\\.')}\n`));
  assert.equal(statSync(certs).mode & 0o777, 0o700);
  for (const node of ['head', 'second', 'third']) {
    assert.equal(openssl('verify', '-CAfile', join(certs, 'ca.crt'), join(certs, `${node}.crt`)).trim(),
                 `${join(certs, `${node}.crt`)}: OK`);
    const text = openssl('x509', '-in', join(certs, `${node}.crt`), '-noout', '-text');
    assert.match(text, new RegExp(`Subject: CN ?= ?${node}\n`));
    assert.match(text, /TLS Web Server Authentication, TLS Web Client Authentication/);
    assert.match(text, new RegExp(`DNS:${node}, IP Address:127\\.0\\.0\\.1`));
    assert.match(text, /CA:FALSE/);
    assert.equal(statSync(join(certs, `${node}.key`)).mode & 0o777, 0o600);
    // The key is the certificate's.
    assert.equal(openssl('pkey', '-in', join(certs, `${node}.key`), '-pubout'),
                 openssl('x509', '-in', join(certs, `${node}.crt`), '-noout', '-pubkey'));
  }
  assert.match(openssl('x509', '-in', join(certs, 'ca.crt'), '-noout', '-text'), /CA:TRUE/);
});

test('a second run keeps every file; a node added to the file gets its own from the same CA', () => {
  const before = readFileSync(join(certs, 'second.crt'), 'utf8');
  const again = troupe('cluster', 'certs', conf);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /were there already/);
  assert.equal(readFileSync(join(certs, 'second.crt'), 'utf8'), before);
  writeFileSync(conf, readFileSync(conf, 'utf8') + '\n[node.fourth]\naddress = 127.0.0.1\nport = 0\n');
  const added = troupe('cluster', 'certs', conf);
  assert.equal(added.status, 0, added.stderr);
  assert.deepEqual(added.stdout.match(/wrote .*/g).map((l) => l.replace(/.*\//, '')), ['fourth.crt', 'fourth.key']);
  assert.match(openssl('verify', '-CAfile', join(certs, 'ca.crt'), join(certs, 'fourth.crt')), /: OK/);
});

test('a node without its key, or with another node\'s, exits 2 naming the file', () => {
  const broken = join(work, 'broken');
  const brokenConf = join(work, 'broken.conf');
  writeFileSync(brokenConf, readFileSync(conf, 'utf8').replace('certs = tls', 'certs = broken'));
  assert.equal(troupe('cluster', 'certs', brokenConf).status, 0);
  copyFileSync(join(broken, 'third.key'), join(broken, 'second.key'));
  const mismatched = troupe('node', '--config', brokenConf, '--name', 'second', '--port', '0');
  assert.equal(mismatched.status, 2, mismatched.stderr);
  assert.match(mismatched.stderr, /node second's TLS files: .*broken\/second\.key: not the key of .*broken\/second\.crt/);
  unlinkSync(join(broken, 'fourth.crt'));
  const missing = troupe('node', '--config', brokenConf, '--name', 'fourth', '--port', '0');
  assert.equal(missing.status, 2, missing.stderr);
  assert.match(missing.stderr, /broken\/fourth\.crt: cannot read the certificate \(troupe cluster certs makes it\)/);
});

test('a cluster of several nodes without certs or insecure = yes is refused with the way out', () => {
  const bare = join(work, 'bare.conf');
  writeFileSync(bare, readFileSync(conf, 'utf8').replace('certs = tls\n', ''));
  const r = troupe('cluster', 'up', bare, '--port', '0');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /links them with mutual TLS: give `certs = DIR` in \[cluster\] and run `troupe cluster certs .*bare\.conf`/);
});
