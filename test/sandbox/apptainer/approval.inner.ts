// Approval on Apptainer, INSIDE the harness as the non-root user (scripted model, labelled
// scripted): a `finish` request approved by a person while no instance runs, then passed; a denied
// `network` request starts the work instance without network (only `lo`); `delete`: files removed or
// truncated through bash, write_file and edit_file are put back and asked (approved ones then go).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decide, pendingApprovals } from "../../../runner/approval/store.ts";
import { runTask } from "../../../runner/run/setup.ts";
import { REPO } from "../../run/harness.ts";

const FIXTURES = join(REPO, "test", "fixtures", "approval");
process.env.SCIFI_APPROVAL_POLL_MS = "200";

function workspace(sam: string): { home: string; sam: string; taskDir: string } {
  const root = mkdtempSync(join(tmpdir(), "scifi-approval-apptainer-"));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  mkdirSync(taskDir);
  writeFileSync(join(taskDir, "task.md"), readFileSync(join(FIXTURES, sam), "utf8"));
  return { home, sam: join(taskDir, "task.md"), taskDir };
}

async function decideWhenAsked(home: string, approved: boolean, note: string): Promise<string> {
  for (let i = 0; i < 1200; i++) {
    const pending = pendingApprovals(home)[0];
    if (pending) {
      decide(home, pending.runId, pending.request.id, approved, note, "tester");
      return pending.request.action;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("no approval request appeared");
}

describe("approval on apptainer (inside the harness, non-root)", { timeout: 300_000 }, () => {
  it("finish: the PASS waits for a person, then the run passes", async () => {
    const ws = workspace("finish.md");
    const decided = decideWhenAsked(ws.home, true, "ok");
    const result = await runTask({
      home: ws.home,
      task: ws.sam,
      backend: "apptainer",
      model: `scripted:${join(FIXTURES, "finish.yaml")}`,
    });
    expect(await decided).toBe("finish");
    expect(result.outcome.status).toBe("passed");
    expect(existsSync(join(ws.taskDir, "out.txt"))).toBe(true);
  });

  it("network denied: the work instance has only lo", async () => {
    const ws = workspace("network.md");
    const decided = decideWhenAsked(ws.home, false, "no downloads");
    const result = await runTask({
      home: ws.home,
      task: ws.sam,
      backend: "apptainer",
      model: `scripted:${join(FIXTURES, "network.yaml")}`,
    });
    expect(await decided).toBe("network");
    expect(result.outcome.status).toBe("passed");
    expect(readFileSync(join(ws.taskDir, "nets.txt"), "utf8").trim()).toBe("lo");
  });

  it("delete: start files removed or truncated through bash, write_file and edit_file are undone and asked", async () => {
    const ws = workspace("delete.md");
    mkdirSync(join(ws.taskDir, "data"));
    for (const f of ["a.csv", "b.csv", "c.csv", "d.txt"])
      writeFileSync(join(ws.taskDir, "data", f), `${f},1,2,3\n`);
    writeFileSync(join(ws.taskDir, "data", "e.txt"), "a much longer line of text\n");
    // deny a.csv, approve b.csv, approve c.csv, deny d.txt, approve e.txt, deny the data/ swap
    // (one request a file: four).
    const decisions = (async () => {
      const seen = new Set<string>();
      for (const approved of [false, true, true, false, true, false, false, false, false]) {
        for (let i = 0; ; i++) {
          if (i > 1200) throw new Error("no delete request appeared");
          const pending = pendingApprovals(ws.home).find((p) => !seen.has(p.request.id));
          if (pending) {
            seen.add(pending.request.id);
            decide(
              ws.home,
              pending.runId,
              pending.request.id,
              approved,
              approved ? undefined : "keep it",
              "tester",
            );
            break;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      return seen.size;
    })();
    const result = await runTask({
      home: ws.home,
      task: ws.sam,
      backend: "apptainer",
      model: `scripted:${join(FIXTURES, "delete.yaml")}`,
    });
    expect(await decisions).toBe(9);
    expect(result.outcome.status).toBe("passed");
    expect(readFileSync(join(ws.taskDir, "data", "a.csv"), "utf8")).toBe("a.csv,1,2,3\n");
    expect(readFileSync(join(ws.taskDir, "data", "b.csv"), "utf8")).toBe("");
    expect(existsSync(join(ws.taskDir, "data", "c.csv"))).toBe(false);
    expect(readFileSync(join(ws.taskDir, "data", "d.txt"), "utf8")).toBe("d.txt,1,2,3\n");
    expect(readFileSync(join(ws.taskDir, "data", "e.txt"), "utf8")).toBe("short\n");
  });
});
