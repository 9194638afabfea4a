// The gateway drill for the Node tests, through tests/support/send_drill.cpp.
import { execFileSync } from 'node:child_process';

export function sendGatewayDrill(pid) {
  execFileSync(process.env.TROUPE_SEND_DRILL, [String(pid), 'gateway']);
}

// The gateway's thread blocks for `ms`, as a stuck handler would.
export function sendGatewayHangDrill(pid, ms) {
  execFileSync(process.env.TROUPE_SEND_DRILL, [String(pid), 'gateway-hang', String(ms)]);
}
