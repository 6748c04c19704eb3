// A long retry-after in a real run (the CLI's wiring: runner/run/setup.ts, Docker, the scripted
// model with a real `retry-after` header): the pre-scan's 429 asking for more than maxDelayMs is
// waited for and the live status says so, then the run passes; when the run has less wall time
// left than the provider asks for, the run fails at once, saying why.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { RunStatus } from "../../runner/run/session/status.ts";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, workspace } from "../run/harness.ts";
import { writeScript } from "./helpers.ts";

/** The Verilator pass script with a 429 first in the pre-scan's queue. */
function withRateLimit(seconds: number): string {
  const script = readFileSync(fixture("verilator-pass.yaml"), "utf8");
  return writeScript(
    script.replace("prescan:\n", `prescan:\n  - status: 429\n    retry_after: ${seconds}\n`),
  );
}

describe.skipIf(!hasEngine("docker"))("a long retry-after in a run (docker)", { timeout: 600_000 }, () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("is waited for within the wall time, shown in the live status, and the run passes", async () => {
    const ws = workspace("verilator-counter-debug");
    const statuses: RunStatus[] = [];
    const t0 = Date.now();
    const result = await runTask({
      home: ws.home,
      task: ws.sam,
      backend: "docker",
      model: `scripted:${withRateLimit(3)}`,
      retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 500, timeoutMs: 120_000 },
      onStatus: (s) => statuses.push(s),
    });
    expect(result.outcome.status).toBe("passed");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3000);
    const notices = statuses.filter((s) => s.notice).map((s) => s.notice);
    expect(notices).toEqual(["waiting 3 s: the provider asked to retry after 3 s (429)"]);
    // The notice goes with the wait: the statuses after it carry none.
    expect(statuses.at(-1)?.notice).toBeUndefined();
  });

  it("fails the run at once when the wall time left is shorter than the wait", async () => {
    const ws = workspace("verilator-counter-debug");
    writeFileSync(ws.sam, readFileSync(ws.sam, "utf8").replace(/^walltime: .*$/m, "walltime: 1m"));
    const t0 = Date.now();
    const result = await runTask({
      home: ws.home,
      task: ws.sam,
      backend: "docker",
      model: `scripted:${withRateLimit(120)}`,
      retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 500, timeoutMs: 120_000 },
    });
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(result.outcome.status).toBe("failed");
    expect(result.outcome.reason).toMatch(
      /the provider asked to retry after 120 s \(429\), more than the (59|60) s of wall time the run has left/,
    );
    const history = readFileSync(join(result.dir, "history.jsonl"), "utf8");
    expect(history).toContain("retry after 120 s");
  });
});
