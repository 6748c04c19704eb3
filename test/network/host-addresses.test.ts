// The proxy refuses this host's own addresses and the prefixes on its links as they are at each
// connection (issue 26.2), not as they were when it started, unless the site lists the range. The
// addresses are documentation ranges on a veth pair in a network namespace this test makes
// (`unshare --net`, needs root); the proxy runs inside it (host-addresses.inner.ts).
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = process.getuid?.() === 0 && spawnSync("unshare", ["--net", "true"]).status === 0;

describe.skipIf(!root)("this host's addresses, read per connection", () => {
  it("refuses a listed name resolving to this host, an on-link neighbour and an address the host got later", () => {
    const r = spawnSync(
      "unshare",
      ["--net", "--", process.execPath, resolve("test/network/host-addresses.inner.ts")],
      {
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(out).toEqual({
      self: "host-address",
      neighbour: "host-address",
      // Before the host has the address, a public one: allowed (nothing routes there in the namespace).
      lateBefore: "allowed-unreachable",
      lateAfter: "host-address",
      // The control: the site lists this host's address; the same request reaches the service.
      selfListed: "reached",
      neighbourListed: "host-address",
    });
  });
});
