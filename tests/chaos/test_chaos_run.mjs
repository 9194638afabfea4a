// `troupe chaos run`: the CI drill set on a CPU cluster of three processes (the head and
// two nodes it starts, the fixture model as two pipeline stages and two expert groups).
// 64 seeded streams run while one node's process is killed 20 times, the other's 10
// times, the first one's stopped (SIGSTOP) 3 times and its stage hung in a step 3 times;
// troupe cluster up starts them again (a stopped one once its heartbeats have been missing
// for the connection timeout, a hung one once its stage has been in one step for the
// progress timeout; with the partitions, 28 ends of node second, up to 21 of them within
// a minute, so the restart limit is raised from 20 a minute);
// while the first node is cut off from the others for 4 s twice (it runs in a network
// namespace of its own, joined to the run's by a veth pair whose end the run takes down:
// needs root and ip(8), as CI has); while its link is throttled to 256 kbit/s with a 200 ms
// queue for 4 s (tc tbf: delay and loss as a congested link has them); while each packet on
// it is held 100 +- 50 ms, at random, for 4 s (a delay line in the run: packets overtake
// each other); while 1,000 connections of garbage go to every port node second listens
// on (its TLS control port and UCX's), three times, and 500 to the head's (HTTP included),
// twice, which no process may die of; and while a 65th client reads its stream a byte a second, which
// the gateway drops after its send timeout (3 s) once that stream's bytes back up. The run
// must lose no stream, end none with an error, give every stream the tokens of the run
// without faults, and recover from each fault
// within 5 s at p99 of its detection (the runner checks these and exits 1 otherwise; the
// test reads the report too, and bounds the detection of a stop by its 2 s timeout plus
// those 5 s).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binary } from '../gateway/server_process.mjs';
import { fixtureModel, writeConf } from '../cli/cluster_process.mjs';

// The cluster tests' three nodes, with second in a network namespace that the chaos run
// makes (named for this process, so that runs side by side do not meet) and links to the
// run's own network, where the head holds 10.231.0.1 and third 127.0.0.1.
const nodes = `[node.head]
address = 10.231.0.1
port = 0

[node.second]
address = 10.231.0.2
port = 0
netns = troupe_${process.pid}_second

[node.third]
address = 127.0.0.1
port = 0

[replica.main]
stages = head:0-1, second:2-3
experts = second:0-7, third:8-15
`;

test('kills, stops, hangs, partitions, congestion and delay during 64 seeded streams: none lost or changed, recovery p99 under 5 s', () => {
  const work = mkdtempSync(join(tmpdir(), 'troupe_chaos_'));
  // A node silent for 2 s (stopped) is lost, killed and started again: within the 5 s; a
  // stage 2 s in one step (waiting on a congested link) is stuck.
  // Room for the slow client beside the 64 streams: none of them waits for its slot.
  writeConf(join(work, 'cluster.conf'), fixtureModel(), nodes,
            { maxNumSeqs: 72, connectionTimeout: 2000, progressTimeout: 2000, gateway: 'send_timeout_ms = 3000\n',
              cluster: 'max_node_restarts = 100\n' });
  writeFileSync(join(work, 'drills.conf'), `[chaos]
cluster = cluster.conf
streams = 64
prompt_tokens = 16
max_tokens = 1024
temperature = 0.7
recovery_limit_ms = 5000

[drill.stage_and_experts]
action = kill
node = second
count = 20
interval_ms = 200

[drill.experts]
action = kill
node = third
count = 10
interval_ms = 200

[drill.stopped]
action = stop
node = second
count = 3
interval_ms = 200

[drill.hung]
action = hang
node = second
count = 3
hang_ms = 60000
interval_ms = 200

[drill.partitioned]
action = partition
node = second
count = 2
duration_ms = 4000
interval_ms = 200

[drill.congested]
action = congest
node = second
count = 1
duration_ms = 4000
rate_kbit = 256
queue_ms = 200
interval_ms = 200

[drill.delayed]
action = delay
node = second
count = 1
duration_ms = 4000
delay_ms = 100
jitter_ms = 50
interval_ms = 200

[drill.garbage]
action = garbage
node = second
count = 3
connections = 1000
interval_ms = 200

[drill.garbage_at_head]
action = garbage
node = head
count = 2
connections = 500
interval_ms = 200

[drill.slow]
action = slow_client
`);
  const report = join(work, 'report.md');
  const r = spawnSync(binary, ['chaos', 'run', join(work, 'drills.conf'), '--report', report, '--log',
                               join(work, 'cluster.log')], { encoding: 'utf8', timeout: 900000 });
  const log = () => readFileSync(join(work, 'cluster.log'), 'utf8').slice(-3000);
  assert.equal(r.status, 0, r.stdout + r.stderr + log());
  const text = readFileSync(report, 'utf8');
  const rows = text.split('\n')
    .filter((l) => /^\| (stage_and_experts|experts|stopped|hung|partitioned|congested|delayed|garbage|garbage_at_head|slow) \|/.test(l))
    .map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
  assert.equal(rows.length, 10, text);
  const planned = { stage_and_experts: '20 of 20', experts: '10 of 10', stopped: '3 of 3', hung: '3 of 3',
                    partitioned: '2 of 2', congested: '1 of 1', delayed: '1 of 1', garbage: '3 of 3',
                    garbage_at_head: '2 of 2', slow: '1 of 1' };
  for (const [drill, node, faults, detect, recover, requests, identical, , gaps] of rows) {
    assert.equal(faults, planned[drill], `${drill}: ${node}`);
    assert.equal(requests, '64 / 64 / 0 / 0', `${drill}: accepted / completed / errored / lost`);
    assert.equal(identical, 'yes', drill);
    if (drill === 'slow') {  // dropped by the send timeout, not before, and soon after
      const dropped = Number(detect.split(' / ')[0]);
      assert.ok(dropped >= 3000 && dropped < 30000, `${drill}: dropped after ${dropped} ms`);
      assert.match(text, /slow: 1 of 1 slow clients dropped by the gateway/);
      continue;
    }
    // Held 50 ms each way, a step that crosses the delayed link and back waits 100 ms
    // at the least.
    if (drill === 'delayed') assert.ok(Number(gaps.split(' / ')[1]) >= 100, `${drill}: longest wait ${gaps} ms`);
    const p99 = Number(recover.split(' / ')[1]);
    assert.ok(p99 < 5000, `${drill}: recovery p99 ${p99} ms`);
    // A stopped node is declared failed within 5 s of its timeout.
    if (drill === 'stopped')
      assert.ok(Number(detect.split(' / ')[1]) < 7000, `${drill}: detected after ${detect} ms`);
    // A node cut off is lost while the cut lasts (its recovery counts from the heal).
    if (drill === 'partitioned') assert.ok(Number(detect.split(' / ')[1]) < 4000, `${drill}: detected after ${detect} ms`);
  }
});
