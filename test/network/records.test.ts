// The run proxy's records reach the run's history: one `network` event per connection, only for
// the run's own sandboxes.
import { mkdtempSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { HistoryEvent } from "../../runner/memory/history-events.ts";
import { sandboxOfRun } from "../../runner/network/records.ts";
import { startRunProxy } from "../../runner/network/run-proxy.ts";
import { networkRows } from "../../runner/report/model.ts";
import { networkRecordsExtension } from "../../runner/run/network-records.ts";
import { taskFolderSpec } from "../helpers/spec.ts";

describe("network records on the history", () => {
  it("matches the loop's sandbox names of a run, not another run's", () => {
    expect(sandboxOfRun("run-1-work1", "run-1")).toBe(true);
    expect(sandboxOfRun("run-1-r2-work3", "run-1")).toBe(true);
    expect(sandboxOfRun("run-1-checks2", "run-1")).toBe(true);
    expect(sandboxOfRun("run-10-work1", "run-1")).toBe(false);
    expect(sandboxOfRun("run-1-x-y-work1", "run-1")).toBe(true);
    expect(sandboxOfRun("other-work1", "run-1")).toBe(false);
  });

  it("a refused request through the proxy's socket is a network event of the run", async () => {
    const events: HistoryEvent[] = [];
    const ext = networkRecordsExtension("run-7");
    ext.onHistory?.((e) => events.push(e));
    const spec = taskFolderSpec(
      { runId: "run-7-work1", image: "scifi-sci:local", taskDir: mkdtempSync(join(tmpdir(), "scifi-rec-")) },
      { networkRules: { allow: ["data.example.org"], deny: [], allowedPrivateRanges: [] } },
    );
    const other = taskFolderSpec(
      { ...spec, runId: "run-8-work1", taskDir: spec.taskDir },
      { networkRules: spec.networkRules },
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
