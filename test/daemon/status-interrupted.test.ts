// `scifi status` through the real CLI: a task recorded as running whose worker process is gone
// (killed, while no daemon runs) is shown `interrupted`, with what happens next; a task whose worker
// is alive stays `running`.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type TaskRecord, writeTask } from "../../runner/daemon/records.ts";
import { runScifi } from "../helpers/cli.ts";

function record(key: string, runId: string, pid: number): TaskRecord {
  const now = new Date().toISOString();
  return {
    version: 1,
    key,
    kind: "file",
    source: `/inbox/${key}`,
    samFile: `/work/${key}/task.md`,
    sha256: "",
    state: "running",
    gpus: 0,
    budgetUsd: 1,
    queuedAt: now,
    updatedAt: now,
    attempts: [{ n: 1, runId, startedAt: now, pid, resumes: 0 }],
  };
}

describe("scifi status", () => {
  it("marks a running task whose worker is gone as interrupted, a live one as running", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-status-"));
    mkdirSync(join(home, "daemon", "tasks"), { recursive: true });
    // A pid that has exited (a finished child) and one that is alive (this test's own process).
    const dead = spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" });
    const deadPid = Number(dead.stdout.trim());
    writeTask(home, record("gone.md", "20261201-000000-gone-aaaaaa", deadPid));
    writeTask(home, record("live.md", "20261201-000000-live-bbbbbb", process.pid));
    const text = await runScifi(home, ["status"], 60_000);
    expect(text.code).toBe(0);
    // A row past 80 columns is folded, its further rows marked `  + ` (renderStatus): joined back here.
    const lines = text.stdout.replace(/\n {2}\+ /g, "").split("\n");
    const gone = lines.find((l) => l.startsWith("gone.md"));
    const live = lines.find((l) => l.startsWith("live.md"));
    expect(gone).toMatch(/^gone\.md\s+interrupted\s/);
    expect(gone).toContain(`its worker (pid ${deadPid}) is gone; the daemon resumes run`);
    expect(live).toMatch(/^live\.md\s+running\s/);
    const json = JSON.parse((await runScifi(home, ["status", "--json"], 60_000)).stdout);
    expect(json.tasks.map((t: { task: string; state: string }) => [t.task, t.state])).toEqual([
      ["gone.md", "interrupted"],
      ["live.md", "running"],
    ]);
  });
});
