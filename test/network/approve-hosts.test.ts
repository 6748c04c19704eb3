// Approving a host at run time, host-side: a real run proxy (on its unix socket) and a real
// approval gate in a temporary home. A host not on the list gets a request filed without waiting
// (the refusal names it), one per host:port, at most five pending; a host the site would not let a
// SAM list gets none; approved, the running proxy lets it through and every later start (and a
// resumed run) lists it; denied, the agent reads who and why. The request, the decision and the
// first connection go on the records.

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApprovalGate, type ApprovalRecord } from "../../runner/approval/gate.ts";
import { decide, runApprovals } from "../../runner/approval/store.ts";
import type { HistoryEvent } from "../../runner/memory/history-events.ts";
import { adviseNotListed } from "../../runner/network/records.ts";
import { type RunProxy, startRunProxy } from "../../runner/network/run-proxy.ts";
import {
  type HostApprovals,
  hostApprovalExtension,
  MAX_HOST_REQUESTS,
  MAX_PENDING_HOST_REQUESTS,
  siteAllowsHost,
} from "../../runner/run/gates/approve-hosts.ts";
import { taskFolderSpec } from "../helpers/spec.ts";

const roots: string[] = [];
let web: Server;
let port = 0;

beforeAll(async () => {
  web = createServer((req, res) => res.end(`hello from ${req.headers.host}${req.url}`));
  await new Promise<void>((r) => web.listen(0, "0.0.0.0", () => r()));
  port = (web.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((r) => web.close(() => r()));
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** One HTTP request through the proxy's socket; the status line and body. */
function fetchVia(proxy: RunProxy, host: string, path = "/x"): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(join(proxy.dir, "proxy.sock"));
    let out = "";
    s.on("data", (d) => (out += d.toString()));
    s.on("error", reject);
    s.on("close", () => {
      const [head = "", body = ""] = out.split("\r\n\r\n");
      resolve(`${head.split("\r\n")[0]} ${body.trim()}`);
    });
    s.write(`GET http://${host}:${port}${path} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`);
  });
}

describe("which hosts can be asked for", () => {
  const site = { allowedHosts: ["*.test:8000", "pypi.org"], deniedHosts: ["upload.test"] };
  it("those a SAM could list: covered by allowedHosts, not denied", () => {
    expect(siteAllowsHost(site, "other.test", 8000)).toEqual({ ok: true, rule: "other.test:8000" });
    expect(siteAllowsHost(site, "pypi.org", 443)).toEqual({ ok: true, rule: "pypi.org:443" });
    expect(siteAllowsHost(site, "pypi.org", 8080)).toMatchObject({
      ok: false,
      why: /do not include pypi.org:8080/,
    });
    expect(siteAllowsHost(site, "evil.org", 443)).toMatchObject({ ok: false });
    expect(siteAllowsHost(site, "upload.test", 8000)).toMatchObject({
      ok: false,
      why: /denies upload.test:8000/,
    });
    expect(siteAllowsHost({ allowedHosts: ["*"], deniedHosts: [] }, "any.org", 22)).toMatchObject({
      ok: true,
    });
  });
});

describe("a host approved at run time (real proxy, real gate)", () => {
  const runId = "20261201-000000-hosts-abcd";
  /** The run's first work sandbox, as its proxy names it in the records. */
  const work1 = { runId, name: `${runId}-work1` };
  let home = "";
  let gate: ApprovalGate;
  let ext: HostApprovals;
  let proxy: RunProxy;
  const records: ApprovalRecord[] = [];
  const history: HistoryEvent[] = [];
  const audit: string[] = [];
  const site = { allowedHosts: [`*.test:${port || 1}`], deniedHosts: ["bad.test"] };

  beforeAll(async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-approve-hosts-"));
    roots.push(root);
    home = join(root, "home");
    mkdirSync(join(home, "runs", runId), { recursive: true });
    site.allowedHosts = [`*.test:${port}`];
    gate = new ApprovalGate({ home, runId, required: ["network"], pollMs: 20 });
    gate.attach({ record: (r) => records.push(r), iteration: () => 1 });
    ext = hostApprovalExtension({
      home,
      runId,
      task: "hosts",
      listed: [`data.test:${port}`],
      site,
      gate,
      pollMs: 20,
    });
    ext.onHistory?.((e) => history.push(e));
    ext.onAudit?.((e) => audit.push(e));
    // A sandbox start asks for the approved hosts (none yet) before its proxy starts.
    expect(ext.networkAllow?.()).toEqual([]);
    const names = [
      "data.test",
      "other.test",
      "bad.test",
      ...Array.from({ length: 8 }, (_, i) => `h${i}.test`),
    ];
    proxy = await startRunProxy(
      taskFolderSpec(
        { runId, image: "x", taskDir: root },
        {
          sandbox: { runId, role: "work", iteration: 1, resumes: 0 },
          networkRules: {
            allow: [`data.test:${port}`],
            deny: ["bad.test"],
            allowedPrivateRanges: ["127.0.0.2/32"],
          },
        },
      ),
      { hosts: Object.fromEntries(names.map((n) => [n, ["127.0.0.2"]])), systemResolver: false },
    );
  });

  afterAll(async () => {
    await ext?.end?.(undefined);
    await proxy?.close();
  });

  it("the first fetch is refused with a request filed, named in the reason; a second files none", async () => {
    expect(await fetchVia(proxy, "data.test")).toContain("200 OK hello from data.test");
    const first = await fetchVia(proxy, "other.test");
    expect(first).toMatch(
      new RegExp(
        `^HTTP/1.1 403 Forbidden scifi network proxy: refused other.test:${port}: .*not on this task's network list.*; approval request network-[0-9a-f]{8} was filed: retry after a person approves it \\(other.test:${port} is then reachable for the rest of the run\\)$`,
      ),
    );
    const views = runApprovals(home, runId);
    expect(views).toHaveLength(1);
    const view = views[0];
    expect(view?.state).toBe("pending");
    expect(view?.request).toMatchObject({
      action: "network",
      waits: false,
      facts: { kind: "network-host", host: "other.test", port: String(port), rule: `other.test:${port}` },
    });
    expect(first).toContain(view?.request.id);
    expect(records.map((r) => r.state)).toEqual(["requested"]);
    expect(await fetchVia(proxy, "other.test")).toMatch(
      /is pending \(filed earlier in this run\): retry after a person approves it/,
    );
    expect(runApprovals(home, runId)).toHaveLength(1);
  });

  it("a flood of refusals of a pending host reads the approvals file a few times, not once each", () => {
    const takeUp = gate.takeUp.bind(gate);
    let reads = 0;
    gate.takeUp = (id) => {
      reads++;
      return takeUp(id);
    };
    try {
      for (let i = 0; i < 2000; i++)
        expect(ext.advise({ runId, name: `${runId}-work1` }, "other.test", port)).toMatch(/is pending/);
    } finally {
      gate.takeUp = takeUp;
    }
    // Once per 200 ms at most from the refusals (and the poller's own): far from once each.
    expect(reads).toBeLessThan(20);
  });

  it("a host the site would not let a SAM list gets no request; a site-denied one is refused by the deny rule", async () => {
    const before = runApprovals(home, runId).length;
    const wrongPort = adviseNotListed(work1, "other.test", 9);
    expect(wrongPort).toMatch(
      /allowedHosts \(\*\.test:\d+\) do not include other.test:9, so no approval can be asked for it/,
    );
    expect(adviseNotListed(work1, "evil.org", 443)).toMatch(/no approval can be asked/);
    expect(await fetchVia(proxy, "bad.test")).toMatch(/denied by the site \(bad.test\)$/);
    expect(runApprovals(home, runId)).toHaveLength(before);
    // Another run's sandbox is not this run's business.
    expect(
      ext.advise(
        { runId: "20261201-000000-other-ffff", name: "20261201-000000-other-ffff-work1" },
        "x.test",
        port,
      ),
    ).toBeUndefined();
  });

  it(`at most ${MAX_PENDING_HOST_REQUESTS} requests pending at once`, async () => {
    const outs: string[] = [];
    for (let i = 0; i < 5; i++) outs.push(await fetchVia(proxy, `h${i}.test`));
    const pending = runApprovals(home, runId).filter((v) => v.state === "pending");
    expect(pending).toHaveLength(MAX_PENDING_HOST_REQUESTS);
    expect(outs.at(-1)).toMatch(
      /5 approval requests for hosts are pending \(at most 5 at once\), so none was filed for h\d.test/,
    );
  });

  it("approved: the running proxy lets it through, the first connection is recorded once, later starts list it", async () => {
    const request = runApprovals(home, runId).find((v) => v.request.facts.host === "other.test");
    if (!request) throw new Error("no request");
    decide(home, runId, request.request.id, true, "ok for the data", "alice");
    ext.poll();
    expect(ext.approved()).toEqual([`other.test:${port}`]);
    expect(await fetchVia(proxy, "other.test", "/y")).toContain(`200 OK hello from other.test:${port}/y`);
    expect(await fetchVia(proxy, "other.test", "/z")).toContain("200 OK");
    expect(records.filter((r) => r.state === "approved")).toHaveLength(1);
    expect(records.find((r) => r.state === "approved")).toMatchObject({ decision: { who: "alice" } });
    const used = history.filter((e) => e.type === "approved_host_used");
    expect(used).toEqual([
      expect.objectContaining({
        id: request.request.id,
        rule: `other.test:${port}`,
        sandbox: `${runId}-work1`,
        host: "other.test",
      }),
    ]);
    expect(audit).toEqual(["approved_host_used"]);
    expect(runApprovals(home, runId).find((v) => v.request.id === request.request.id)?.used).toBe(true);
    // A later sandbox of this run, and the run resumed by another process (from approvals.jsonl).
    expect(ext.networkAllow?.()).toEqual([`other.test:${port}`]);
    const resumed = hostApprovalExtension({ home, runId, task: "hosts", listed: [], site, gate, pollMs: 20 });
    try {
      expect(resumed.networkAllow?.()).toEqual([`other.test:${port}`]);
    } finally {
      await resumed.end?.(undefined);
    }
  });

  it("approved while the proxy missed it (a proxy started meanwhile): told at the next refusal", async () => {
    const view = runApprovals(home, runId).find((v) => v.request.facts.host === "h0.test");
    if (!view) throw new Error("no request");
    decide(home, runId, view.request.id, true, undefined, "alice");
    // The run's poll takes the decision up and tells the proxies running now...
    ext.poll();
    expect(await fetchVia(proxy, "h0.test")).toContain("200 OK");
    // ... but a proxy that starts afterwards without the host (a sandbox started from a stale
    // grant) is told at its first refusal, which says so.
    const late = await startRunProxy(
      taskFolderSpec(
        { runId, image: "x", taskDir: home },
        {
          sandbox: { runId, role: "work", iteration: 2, resumes: 0 },
          networkRules: { allow: [], deny: [], allowedPrivateRanges: ["127.0.0.2/32"] },
        },
      ),
      { hosts: { "h0.test": ["127.0.0.2"] }, systemResolver: false },
    );
    try {
      expect(await fetchVia(late, "h0.test")).toMatch(/was approved: retry now/);
      expect(await fetchVia(late, "h0.test")).toContain("200 OK");
    } finally {
      await late.close();
    }
  });

  it("denied: the agent reads who and why, and nothing is asked again", async () => {
    const view = runApprovals(home, runId).find((v) => v.request.facts.host === "h1.test");
    if (!view) throw new Error("no request");
    decide(home, runId, view.request.id, false, "not that archive", "bob");
    await new Promise((r) => setTimeout(r, 100));
    expect(await fetchVia(proxy, "h1.test")).toMatch(
      /approval request network-[0-9a-f]{8} for h1.test:\d+ was denied by bob: not that archive; it is not asked again in this run/,
    );
    expect(records.find((r) => r.state === "denied")).toMatchObject({ decision: { who: "bob" } });
    expect(runApprovals(home, runId).filter((v) => v.request.facts.host === "h1.test")).toHaveLength(1);
  });

  it(`at most ${MAX_HOST_REQUESTS} requests a run in all`, () => {
    const few = hostApprovalExtension({
      home,
      runId,
      task: "hosts",
      listed: [],
      site,
      gate,
      maxRequests: 6,
      maxPending: 99,
    });
    try {
      // This run has filed 5 so far (other.test, h0..h3): one more, then none.
      expect(few.advise(work1, "h7.test", port)).toMatch(/was filed/);
      expect(few.advise(work1, "h8.test", port)).toMatch(
        /has asked for 6 hosts already \(at most 6 a run\), so none was filed for h8.test/,
      );
    } finally {
      void few.end?.(undefined);
    }
  });

  it("the run's end withdraws what nobody decided; the extension stops listening", async () => {
    gate.withdrawPending("the run ended passed");
    await ext.end?.(undefined);
    expect(runApprovals(home, runId).filter((v) => v.state === "pending")).toEqual([]);
    expect(adviseNotListed(work1, "h9.test", port)).toBeUndefined();
  });
});
