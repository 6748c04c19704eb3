// The run proxy's records reach the run's history: one `network` event per connection, only for
// the run's own sandboxes.
import { mkdtempSync, statSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HistoryTape, readHistory } from "../../runner/memory/history.ts";
import type { ConnectionRecord, HistoryEvent } from "../../runner/memory/history-events.ts";
import { DEFAULT_PROXY_LIMITS, MAX_REASON_LENGTH } from "../../runner/network/limits.ts";
import { emitNetworkRecord } from "../../runner/network/records.ts";
import { startRunProxy } from "../../runner/network/run-proxy.ts";
import { sandboxName } from "../../runner/policy/spec.ts";
import { networkRows } from "../../runner/report/model.ts";
import { networkRecordsExtension } from "../../runner/run/session/network-records.ts";
import { taskFolderSpec } from "../helpers/spec.ts";

describe("network records on the history", () => {
  it("a sandbox's name is formatted from its identity in one place", () => {
    const work = { runId: "run-1", role: "work", iteration: 1, resumes: 0 };
    expect(sandboxName({ runId: "run-1", sandbox: work })).toBe("run-1-work1");
    expect(sandboxName({ runId: "run-1", sandbox: { ...work, resumes: 2, iteration: 3 } })).toBe(
      "run-1-r2-work3",
    );
    expect(sandboxName({ runId: "run-1", sandbox: { ...work, role: "checks", iteration: 2 } })).toBe(
      "run-1-checks2",
    );
    expect(
      sandboxName({ runId: "run-1", sandbox: { ...work, role: "checks", stage: 1, iteration: 2 } }),
    ).toBe("run-1-checks.22");
    // Outside a run's phases (tests, benchmarks) the spec's run id is the name.
    expect(sandboxName({ runId: "bench-1" })).toBe("bench-1");
  });

  it("a later check stage's sandbox is the run's; a run whose id extends this one's is not", async () => {
    // Names were once parsed back with a pattern: it refused `run-7-r1-checks.22` and took
    // `run-7-x-work1` (run `run-7-x`) for run-7's. The records now carry the run as data.
    const events: HistoryEvent[] = [];
    const ext = networkRecordsExtension("run-7");
    ext.onHistory?.((e) => events.push(e));
    const taskDir = mkdtempSync(join(tmpdir(), "scifi-rec-"));
    const networkRules = { allow: ["data.example.org"], deny: [], allowedPrivateRanges: [] };
    const specs = [
      { runId: "run-7", sandbox: { runId: "run-7", role: "checks", stage: 1, iteration: 2, resumes: 1 } },
      { runId: "run-7-x", sandbox: { runId: "run-7-x", role: "work", iteration: 1, resumes: 0 } },
    ].map((id) =>
      taskFolderSpec({ runId: id.runId, image: "scifi-sci:local", taskDir }, { ...id, networkRules }),
    );
    for (const s of specs) {
      const rp = await startRunProxy(s, { systemResolver: false });
      try {
        expect(await refusedConnect(rp.dir)).toMatch(/^HTTP\/1.1 403/);
      } finally {
        await rp.close();
      }
    }
    await ext.end?.(undefined);
    expect(events.map((e) => e.type === "network" && e.sandbox)).toEqual(["run-7-r1-checks.22"]);
  });

  it("a refused request through the proxy's socket is a network event of the run", async () => {
    const events: HistoryEvent[] = [];
    const ext = networkRecordsExtension("run-7");
    ext.onHistory?.((e) => events.push(e));
    const spec = taskFolderSpec(
      { runId: "run-7", image: "scifi-sci:local", taskDir: mkdtempSync(join(tmpdir(), "scifi-rec-")) },
      {
        sandbox: { runId: "run-7", role: "work", iteration: 1, resumes: 0 },
        networkRules: { allow: ["data.example.org"], deny: [], allowedPrivateRanges: [] },
      },
    );
    const other = taskFolderSpec(
      { ...spec, runId: "run-8", taskDir: spec.taskDir },
      {
        sandbox: { runId: "run-8", role: "work", iteration: 1, resumes: 0 },
        networkRules: spec.networkRules,
      },
    );
    for (const s of [spec, other]) {
      const rp = await startRunProxy(s, { systemResolver: false });
      try {
        const answer = await new Promise<string>((resolve, reject) => {
          const c = connect(join(rp.dir, "proxy.sock"));
          let out = "";
          c.on("data", (d) => (out += d));
          c.on("close", () => resolve(out));
          c.on("error", reject);
          c.write("CONNECT evil.example.com:443 HTTP/1.1\r\n\r\n");
        });
        expect(answer).toMatch(/^HTTP\/1.1 403/);
      } finally {
        await rp.close();
      }
    }
    await ext.end?.(undefined);
    // The report lists them.
    const rows = networkRows(events.map((e, i) => ({ ...e, seq: i, time: "2026-12-01T00:00:00Z" })));
    expect(rows).toEqual([
      expect.objectContaining({
        sandbox: "run-7-work1",
        host: "evil.example.com",
        allowed: false,
        rule: "not-listed",
      }),
    ]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: "network",
      sandbox: "run-7-work1",
      kind: "connect",
      host: "evil.example.com",
      port: 443,
      allowed: false,
      rule: "not-listed",
    });
  });
});

/** A CONNECT to a host not on the list, through the proxy's socket in `dir`: the proxy's answer. */
function refusedConnect(dir: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const c = connect(join(dir, "proxy.sock"));
    let out = "";
    c.on("data", (d) => (out += d));
    c.on("close", () => resolve(out));
    c.on("error", reject);
    c.write("CONNECT evil.example.com:443 HTTP/1.1\r\n\r\n");
  });
}

/** Sends `text` to a run proxy's socket; resolves with its answer once it closes. */
function ask(socket: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect(socket);
    let out = "";
    c.on("data", (d) => (out += d));
    c.on("close", () => resolve(out));
    c.on("error", reject);
    c.write(text);
  });
}

describe("network records are bounded", () => {
  it("refused CONNECTs with 60 KB host names do not grow history.jsonl beyond the cap", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-rec-"));
    const tape = new HistoryTape(join(dir, "history.jsonl"));
    const ext = networkRecordsExtension("run-60k");
    ext.onHistory?.((e) => tape.append(e));
    const spec = taskFolderSpec(
      { runId: "run-60k", image: "scifi-sci:local", taskDir: dir },
      {
        sandbox: { runId: "run-60k", role: "work", iteration: 1, resumes: 0 },
        networkRules: { allow: ["*.w.example"], deny: [], allowedPrivateRanges: [] },
      },
    );
    const rp = await startRunProxy(spec, { systemResolver: false });
    const refused = DEFAULT_PROXY_LIMITS.maxRecords.refused;
    try {
      const name = `${"x".repeat(63)}.`.repeat(950);
      for (let i = 0; i < refused + 100; i += 50)
        await Promise.all(
          Array.from({ length: 50 }, (_, j) =>
            ask(join(rp.dir, "proxy.sock"), `CONNECT ${name}${i + j}.w.example:443 HTTP/1.1\r\n\r\n`),
          ),
        );
    } finally {
      await rp.close();
      await ext.end?.(undefined);
    }
    const events = readHistory(tape.file);
    expect(events.filter((e) => e.type === "network" && e.rule === "bad-host")).toHaveLength(refused);
    expect(events.filter((e) => e.type === "network" && e.rule === "flood")).toHaveLength(1);
    for (const e of events) {
      if (e.type !== "network") continue;
      expect(e.host.length).toBeLessThanOrEqual(253);
      expect((e.reason ?? "").length).toBeLessThanOrEqual(MAX_REASON_LENGTH + 60);
    }
    // 600 names of 60 KB each (36 MB asked for), a few hundred KB written.
    expect(statSync(tape.file).size).toBeLessThan(refused * 1200);
  });

  it("the run's quota: past it one flood event, and the run's proxies make no new connection", async () => {
    const events: HistoryEvent[] = [];
    const ext = networkRecordsExtension("run-q", { events: 5, bytes: 1024 * 1024 });
    ext.onHistory?.((e) => events.push(e));
    const spec = taskFolderSpec(
      { runId: "run-q", image: "scifi-sci:local", taskDir: mkdtempSync(join(tmpdir(), "scifi-rec-")) },
      {
        sandbox: { runId: "run-q", role: "work", iteration: 1, resumes: 0 },
        networkRules: { allow: ["*.w.example"], deny: [], allowedPrivateRanges: [] },
      },
    );
    const rp = await startRunProxy(spec, { systemResolver: false });
    try {
      const r: ConnectionRecord = {
        time: "2026-12-01T00:00:00Z",
        kind: "connect",
        host: "a.w.example",
        port: 443,
        allowed: true,
        rule: "allow *.w.example",
        bytesOut: 0,
        bytesIn: 0,
        durationMs: 0,
      };
      for (let i = 0; i < 10; i++) emitNetworkRecord({ runId: "run-q", name: "run-q-work1" }, r);
      expect(events).toHaveLength(6);
      expect(events.at(-1)).toMatchObject({ type: "network", rule: "flood" });
      // An allowed name is refused now: its connection could not be recorded.
      const answer = await ask(join(rp.dir, "proxy.sock"), "CONNECT b.w.example:443 HTTP/1.1\r\n\r\n");
      expect(answer).toMatch(/^HTTP\/1.1 403/);
      expect(answer).toContain("X-Scifi-Refused: over-cap");
      expect(answer).toContain("records quota");
    } finally {
      await rp.close();
      await ext.end?.(undefined);
    }
    expect(events).toHaveLength(6);
  });
});
