// The delete guard without a sandbox: what counts as a removal of a start file (missing, not a
// regular file, under a folder that became a link, shorter, rewritten at the same size or longer,
// replaced by a rename) and what does not (new files, an append, the same content written again); the host-side check after the work pass (a background process that
// removed a file after the agent's last call): undone, asked, then approved or denied.
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ApprovalGate } from "../../runner/approval/gate.ts";
import { decide, pendingApprovals } from "../../runner/approval/store.ts";
import { DeleteGuardTooLarge, DeletionGuard, MAX_FILE_REQUESTS } from "../../runner/run/gates/deletion.ts";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function setup(maxBytes?: number, extra = 0) {
  const root = mkdtempSync(join(tmpdir(), "scifi-delete-guard-"));
  roots.push(root);
  const home = join(root, "home");
  const runDir = join(home, "runs", "r1");
  mkdirSync(runDir, { recursive: true });
  const task = join(root, "task");
  mkdirSync(join(task, "data"), { recursive: true });
  writeFileSync(join(task, "data", "a.csv"), "1,2,3\n");
  writeFileSync(join(task, "data", "b.csv"), "4,5,6\n");
  writeFileSync(join(task, "top.txt"), "top\n");
  for (let n = 0; n < extra; n++) writeFileSync(join(task, "data", `many-${n}.txt`), `${n}\n`);
  const gate = new ApprovalGate({ home, runId: "r1", required: ["delete"], pollMs: 20 });
  const guard = DeletionGuard.open({
    taskDir: task,
    dir: join(runDir, "deletion"),
    gate,
    ...(maxBytes !== undefined ? { maxBytes } : {}),
  });
  return { home, task, runDir, guard, gate };
}

async function waitFor<T>(get: () => T | undefined): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("timed out");
}

describe("the delete guard", () => {
  it("finds missing, non-regular and shorter start files; ignores new files and appends", () => {
    const { task, guard } = setup();
    expect(guard.files.map((f) => f.rel).sort()).toEqual(["data/a.csv", "data/b.csv", "top.txt"]);
    writeFileSync(join(task, "new.txt"), "mine");
    rmSync(join(task, "new.txt"));
    writeFileSync(join(task, "top.txt"), "top\nand more\n"); // an append destroys nothing
    expect(guard.removals()).toEqual([]);
    writeFileSync(join(task, "data", "b.csv"), "4\n");
    rmSync(join(task, "top.txt"));
    mkdirSync(join(task, "top.txt"));
    expect(guard.removals().map((r) => [r.file.rel, r.kind, r.found])).toEqual([
      [
        "data/b.csv",
        "truncated",
        "6 -> 2 bytes; first difference at byte 1 (line 1); 1 of 1 start line(s) gone",
      ],
      ["top.txt", "deleted", "replaced by something that is not a regular file"],
    ]);
    expect(guard.removals()[0]?.agentContent?.toString()).toBe("4\n");
  });

  it("a rewrite of any size destroys the data: same size, longer, replaced by rename (issue 25)", () => {
    const { task, guard } = setup();
    writeFileSync(join(task, "data", "a.csv"), "9,9,9\n"); // same size
    writeFileSync(join(task, "top.txt"), "garbage that is much longer than the start\n"); // longer
    // Replaced: another file renamed over it (new inode), same size.
    writeFileSync(join(task, "x.tmp"), "4,5,7\n");
    renameSync(join(task, "x.tmp"), join(task, "data", "b.csv"));
    expect(guard.removals().map((r) => [r.file.rel, r.kind, r.found])).toEqual([
      [
        "data/a.csv",
        "rewritten",
        "rewritten, 6 -> 6 bytes; first difference at byte 0 (line 1); 1 of 1 start line(s) gone",
      ],
      [
        "data/b.csv",
        "rewritten",
        "rewritten, 6 -> 6 bytes; first difference at byte 4 (line 1); 1 of 1 start line(s) gone",
      ],
      [
        "top.txt",
        "rewritten",
        "rewritten, 4 -> 43 bytes; first difference at byte 0 (line 1); 1 of 1 start line(s) gone",
      ],
    ]);
    // Same content written again (a new mtime): nothing destroyed, nothing asked.
    writeFileSync(join(task, "data", "a.csv"), "1,2,3\n");
    expect(guard.removals().map((r) => r.file.rel)).toEqual(["data/b.csv", "top.txt"]);
  });

  it("after the pass, a rewrite is put back and asked; approved, the agent's content is put in place", async () => {
    const { home, task, guard } = setup();
    writeFileSync(join(task, "data", "a.csv"), "garbage garbage\n");
    const approved = guard.afterPass("after a job of the run ended");
    const request = await waitFor(() => pendingApprovals(home)[0]);
    expect(request.request.summary).toBe("rewrite data/a.csv, after a job of the run ended");
    expect(request.request.detail).toContain(
      "data/a.csv: rewritten (rewritten, 6 -> 16 bytes; first difference",
    );
    expect(readFileSync(join(task, "data", "a.csv"), "utf8")).toBe("1,2,3\n");
    decide(home, "r1", request.request.id, true, undefined, "carol");
    expect(await approved).toBe("approved");
    expect(readFileSync(join(task, "data", "a.csv"), "utf8")).toBe("garbage garbage\n");
    expect(guard.removals()).toEqual([]);
  });

  it("a folder on the way replaced by a link counts as removed (nothing is followed)", () => {
    const { task, guard } = setup();
    const elsewhere = mkdtempSync(join(tmpdir(), "scifi-delete-guard-out-"));
    roots.push(elsewhere);
    writeFileSync(join(elsewhere, "a.csv"), "1,2,3\n");
    writeFileSync(join(elsewhere, "b.csv"), "4,5,6\n");
    rmSync(join(task, "data"), { recursive: true });
    symlinkSync(elsewhere, join(task, "data"));
    expect(guard.removals().map((r) => r.file.rel)).toEqual(["data/a.csv", "data/b.csv"]);
  });

  it("after the pass, a removal is undone host-side and asked: denied, it stays; approved, the runner removes it", async () => {
    const { home, task, guard } = setup();
    rmSync(join(task, "data"), { recursive: true });
    symlinkSync("/etc", join(task, "data"));
    const denied = guard.afterPass();
    // One request a file: both files under the swapped folder.
    const first = await waitFor(() => pendingApprovals(home)[0]);
    expect(first.request).toMatchObject({ action: "delete" });
    expect(first.request.detail).toMatch(/data\/[ab]\.csv: deleted \(missing\)/);
    // Back before the request waits, in a real folder (the link is gone, /etc untouched).
    expect(readFileSync(join(task, "data", "a.csv"), "utf8")).toBe("1,2,3\n");
    expect(readFileSync(join(task, "data", "b.csv"), "utf8")).toBe("4,5,6\n");
    decide(home, "r1", first.request.id, false, "keep", "carol");
    const firstAgain = await waitFor(() => pendingApprovals(home)[0]);
    expect(firstAgain.request.summary).not.toBe(first.request.summary);
    decide(home, "r1", firstAgain.request.id, false, "keep", "carol");
    expect(await denied).toBe("denied");
    expect(guard.removals()).toEqual([]);

    writeFileSync(join(task, "data", "b.csv"), "");
    rmSync(join(task, "data", "a.csv"));
    const approved = guard.afterPass();
    const summaries: string[] = [];
    for (let n = 0; n < 2; n++) {
      const next = await waitFor(() => pendingApprovals(home)[0]);
      expect(readFileSync(join(task, "data", "b.csv"), "utf8")).toBe("4,5,6\n");
      summaries.push(next.request.summary);
      decide(home, "r1", next.request.id, true, undefined, "carol");
    }
    expect(summaries.sort()).toEqual([
      "delete data/a.csv, after the agent's last tool call",
      "truncate data/b.csv, after the agent's last tool call",
    ]);
    expect(await approved).toBe("approved");
    expect(() => readFileSync(join(task, "data", "a.csv"))).toThrow(/ENOENT/);
    expect(readFileSync(join(task, "data", "b.csv"), "utf8")).toBe("");
    // The index follows: nothing is asked again.
    expect(guard.removals()).toEqual([]);
    expect(guard.files.map((f) => f.rel).sort()).toEqual(["data/b.csv", "top.txt"]);
  });

  it(`more than ${MAX_FILE_REQUESTS} files at once are one request listing each (not hundreds)`, async () => {
    const { home, task, guard } = setup(undefined, MAX_FILE_REQUESTS);
    rmSync(join(task, "data"), { recursive: true });
    const denied = guard.afterPass();
    const one = await waitFor(() => pendingApprovals(home)[0]);
    expect(one.request.summary).toBe(
      `delete or rewrite ${MAX_FILE_REQUESTS + 2} files that existed at run start, after the agent's last tool call (more than ${MAX_FILE_REQUESTS} at once: one request)`,
    );
    expect(one.request.detail.split("\n").filter((l) => l.endsWith(": deleted (missing)"))).toHaveLength(
      MAX_FILE_REQUESTS + 2,
    );
    decide(home, "r1", one.request.id, false, "keep", "carol");
    expect(await denied).toBe("denied");
    expect(readFileSync(join(task, "data", "many-3.txt"), "utf8")).toBe("3\n");
    expect(pendingApprovals(home)).toEqual([]);
  });

  it("a file name with a newline is shell-quoted in the request: it cannot fake a line of the detail", async () => {
    const { home, task } = setup();
    writeFileSync(join(task, "data", "x\ntop.txt: deleted (approved already)"), "1\n");
    const gate = new ApprovalGate({ home, runId: "r1", required: ["delete"], pollMs: 20 });
    const guard = DeletionGuard.open({ taskDir: task, dir: join(home, "runs", "r1", "deletion2"), gate });
    rmSync(join(task, "data", "x\ntop.txt: deleted (approved already)"));
    const denied = guard.afterPass();
    const asked = await waitFor(() => pendingApprovals(home)[0]);
    expect(asked.request.summary).toBe(
      "delete $'data/x\\ntop.txt: deleted (approved already)', after the agent's last tool call",
    );
    expect(asked.request.detail.split("\n").filter((l) => l.startsWith("top.txt"))).toEqual([]);
    decide(home, "r1", asked.request.id, false, "keep", "carol");
    expect(await denied).toBe("denied");
  });

  it("reopened (a resumed run), the guard reads its index instead of copying the folder again", () => {
    const { task, runDir, gate } = setup();
    rmSync(join(task, "top.txt"));
    const again = DeletionGuard.open({ taskDir: task, dir: join(runDir, "deletion"), gate });
    expect(again.removals().map((r) => r.file.rel)).toEqual(["top.txt"]);
  });

  it("a task folder over the cap is refused (a deletion that could not be undone would be a no-op)", () => {
    expect(() => setup(8)).toThrow(DeleteGuardTooLarge);
  });
});
