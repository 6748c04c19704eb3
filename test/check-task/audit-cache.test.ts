// The audit's cache (runner/check-task/audit.ts): a report is reused exactly while nothing it judged
// changed. A report kept under the key of the task as it is comes back from auditTask without a run
// (also for a copy of the folder elsewhere); a change to the checks, the SAM's text, a check asset
// (its bytes or its mode), a new file, the solution, the backend or the SAM file chosen gives
// another key, under which nothing is kept, so the task is audited again. No sandbox is needed: a
// hit returns before any run starts.
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeJsonAtomic } from "../../runner/atomic-write.ts";
import {
  AUDIT_VERSION,
  type AuditReport,
  auditCacheFile,
  auditHash,
  auditTask,
} from "../../runner/check-task/audit.ts";
import { taskRoot } from "./tasks.ts";

/** A stored report for `hash`, as a finished audit writes it (sound, no runs needed to read it). */
function keep(home: string, taskDir: string, hash: string): void {
  const report: AuditReport = {
    version: AUDIT_VERSION,
    task: "sound",
    taskDir,
    sam: join(taskDir, "task.md"),
    contentHash: hash,
    backend: "docker",
    checks: ["root/check-1", "root/check-2"],
    sound: true,
    audits: [],
    findings: [],
    auditedAt: "2026-01-01T00:00:00.000Z",
  };
  mkdirSync(join(home, "check-task"), { recursive: true });
  writeJsonAtomic(auditCacheFile(home, hash), report);
}

describe("check-task's cache key", () => {
  it("a kept report is read back for the same content, here and in a copy of the folder", async () => {
    const { root, home, solution } = taskRoot(["sound"]);
    const task = join(root, "sound");
    const hash = await auditHash(task, { backend: "docker", sam: "task.md", solution });
    keep(home, task, hash);
    const report = await auditTask(task, { home, solution });
    expect(report.cached).toBe(true);
    expect(report.contentHash).toBe(hash);
    const copy = join(root, "copy-of-sound");
    cpSync(task, copy, { recursive: true });
    const again = await auditTask(copy, { home, solution });
    expect(again.cached).toBe(true);
    expect(again.taskDir).toBe(copy);
  });

  it("a report whose recorded hash is not its key is not used", async () => {
    const { root, home } = taskRoot(["sound"]);
    const task = join(root, "sound");
    // Kept under the key of a backend that does not exist: a run there fails at once (no sandbox).
    const hash = await auditHash(task, { backend: "no-such-backend", sam: "task.md" });
    keep(home, task, hash);
    const file = auditCacheFile(home, hash);
    const stored = JSON.parse(readFileSync(file, "utf8")) as AuditReport;
    writeFileSync(file, JSON.stringify({ ...stored, contentHash: "0".repeat(64) }));
    // Not a hit: the audit runs, and each run is an error (the backend does not exist).
    const report = await auditTask(task, { home, backend: "no-such-backend" });
    expect(report.cached).toBeUndefined();
    expect(report.audits.every((a) => a.status === "error")).toBe(true);
  });

  const changes: [string, (task: string, solution: string) => void][] = [
    [
      "a check's command",
      (task) => {
        const sam = join(task, "task.md");
        writeFileSync(sam, readFileSync(sam, "utf8").replace("test -s answer.txt", "test -f answer.txt"));
      },
    ],
    [
      "the SAM's text (no check touched)",
      (task) => {
        const sam = join(task, "task.md");
        writeFileSync(sam, readFileSync(sam, "utf8").replace("# Sum the numbers", "# Add the numbers"));
      },
    ],
    ["a check asset's bytes", (task) => writeFileSync(join(task, "checks", "want.txt"), "7\n")],
    ["a check asset's mode", (task) => chmodSync(join(task, "checks", "want.txt"), 0o755)],
    ["a new file in the folder", (task) => writeFileSync(join(task, "checks", "extra.sh"), "exit 0\n")],
    ["the data the task reads", (task) => writeFileSync(join(task, "data.txt"), "1\n2\n4\n")],
    ["the solution", (_task, solution) => writeFileSync(join(solution, "answer.txt"), "7\n")],
  ];
  for (const [what, change] of changes)
    it(`${what}: another key, nothing kept under it`, async () => {
      const { root, home, solution } = taskRoot(["sound"]);
      const task = join(root, "sound");
      const before = await auditHash(task, { backend: "docker", sam: "task.md", solution });
      keep(home, task, before);
      change(task, solution);
      const after = await auditHash(task, { backend: "docker", sam: "task.md", solution });
      expect(after).not.toBe(before);
      expect(existsSync(auditCacheFile(home, after))).toBe(false);
    });

  it("the backend and the SAM file chosen are part of the key", async () => {
    const { root, solution } = taskRoot(["sound"]);
    const task = join(root, "sound");
    cpSync(join(task, "task.md"), join(task, "task.nl.md"));
    const base = await auditHash(task, { backend: "docker", sam: "task.md", solution });
    expect(await auditHash(task, { backend: "docker", sam: "task.md", solution })).toBe(base);
    expect(await auditHash(task, { backend: "apptainer", sam: "task.md", solution })).not.toBe(base);
    expect(await auditHash(task, { backend: "docker", sam: "task.nl.md", solution })).not.toBe(base);
    expect(await auditHash(task, { backend: "docker", sam: "task.md" })).not.toBe(base);
  });
});
