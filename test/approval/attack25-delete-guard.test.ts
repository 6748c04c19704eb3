// Found by the issue-25 attacker session (was test/open/a25-delete-guard.pending.ts). Fixed: the guard
// writes a file's pages back before it verifies it (a later mapped write then moves ctime), reads
// racy and tmpfs files every time, and refuses a start folder it cannot copy whole (not UTF-8,
// unreadable) instead of skipping it.
// Attacker session for issue 25 (A25-1, A25-2): two ways to destroy a start file's data under
// `approval: [delete]` that the guard's comparison does not see. Host-only (the guard as the run
// uses it, no sandbox): the same page cache and inode a bind-mounted task folder has in Docker.
//
// Docs promise (docs/approval.md, "`delete` exactly"): the runner copies "every regular file of
// the task folder" before the first work pass, and "a start file ... whose start content is no
// longer its first bytes ... is a rewrite: put back and asked"; "A file whose inode, size, mtime and
// ctime are as last verified is not read again (ctime cannot be set from user space)". Trust rule 9:
// "file names are parsed ... bytes, not strings that a decoder may change".
//
// What happened:
// - A25-1 (mmap): a process maps a start file shared, writes each page's first byte with its own
//   value (the file is unchanged; mtime/ctime move once, at the first write fault), the guard
//   verifies it (same content: it records the new fingerprint), and then the process overwrites the
//   whole file through the mapping. The pages are already writable, so no fault and no time update:
//   inode, size, mtime and ctime are as verified, the guard does not read it again, and `removals()`
//   reports nothing. An agent does this with one background `python3` in its first bash call.
// - A25-2 (a folder whose name is not UTF-8, e.g. Latin-1 `donn\xe9es/`): Node decodes the name to
//   U+FFFD, `readdirSync` of the decoded path fails and the walk's catch skips the folder silently:
//   none of its files is copied or watched, so `rm -rf` of it asks nothing. (A file, not a folder,
//   with such a name makes `DeletionGuard.open` throw a raw ENOENT instead.)
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ApprovalGate } from "../../runner/approval/gate.ts";
import { DeletionGuard } from "../../runner/run/gates/deletion.ts";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function setup(fill: (task: string) => void) {
  const root = mkdtempSync(join(tmpdir(), "scifi-a25-guard-"));
  roots.push(root);
  const home = join(root, "home");
  mkdirSync(join(home, "runs", "r1"), { recursive: true });
  const task = join(root, "task");
  mkdirSync(task);
  fill(task);
  const gate = new ApprovalGate({ home, runId: "r1", required: ["delete"], pollMs: 20 });
  const guard = DeletionGuard.open({ taskDir: task, dir: join(home, "runs", "r1", "deletion"), gate });
  return { task, guard };
}

// Maps the file, writes every page's first byte with its own value ("ready"), then on a line on
// stdin overwrites every byte with 'X' through the mapping ("done"). No msync, no write(2).
const MMAP_PY = `
import mmap, sys
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 0)
for off in range(0, len(m), 4096):
    m[off] = m[off]
print("ready", flush=True)
sys.stdin.readline()
m[:] = b"X" * len(m)
print("done", flush=True)
sys.stdin.readline()
`;

describe("A25: data destroyed where the delete guard does not compare", () => {
  it("A25-1: a rewrite through a shared mapping after the guard verified the file is found", async () => {
    const start = "energy\n".concat("1.0\n".repeat(4000));
    const { task, guard } = setup((t) => writeFileSync(join(t, "raw.csv"), start));
    const child = spawn("python3", ["-c", MMAP_PY, join(task, "raw.csv")], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines: string[] = [];
    const next = () =>
      new Promise<string>((resolve) => {
        const tick = () => (lines.length ? resolve(lines.shift() ?? "") : setTimeout(tick, 10));
        tick();
      });
    // Lines, not chunks: a chunk may hold part of a line, or only its newline.
    let partial = "";
    child.stdout.on("data", (b: Buffer) => {
      const parts = (partial + b.toString()).split("\n");
      partial = parts.pop() ?? "";
      lines.push(...parts.filter((l) => l !== ""));
    });
    try {
      expect(await next()).toBe("ready");
      // The tool call that started it returns: the guard compares (same content, new fingerprint).
      expect(guard.removals()).toEqual([]);
      child.stdin.write("go\n");
      expect(await next()).toBe("done");
      // The data is gone (the page cache is what every reader sees)...
      expect(readFileSync(join(task, "raw.csv"), "utf8").startsWith("XXXX")).toBe(true);
      // ...and the next comparison must say so.
      const found = guard.removals();
      expect(found.map((r) => `${r.kind} ${r.file.rel}`)).toEqual(["rewritten raw.csv"]);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("A25-2: a start folder whose name is not UTF-8 is refused before the agent starts, never skipped", () => {
    const latin1 = Buffer.from("donn\xe9es", "latin1");
    expect(() =>
      setup((t) => {
        const dir = Buffer.concat([Buffer.from(`${t}/`), latin1]);
        mkdirSync(dir);
        writeFileSync(Buffer.concat([dir, Buffer.from("/raw.csv")]), "1,2,3\n");
        writeFileSync(join(t, "top.txt"), "top\n");
      }),
    ).toThrow(/needs file names that are UTF-8, and donn\\xe9es in the task folder is not; rename it/);
  });
});
