// Found by the issue-25 attacker session (was test/open/a25-mmap.e2e.pending.ts). Fixed: the guard
// writes a file's pages back before it verifies it, so the later mapped overwrite faults and moves
// ctime; the fixture's second call spans the overwrite and the third reads the file: it must read
// the start content, put back after the second call.
// Attacker session for issue 25 (A25-1 end to end): the shared-mapping rewrite of
// a25-delete-guard.pending.ts through the real CLI, a real Docker sandbox and a scripted agent
// (labelled scripted; test/fixtures/attack25/mmap.yaml).
//
// Docs promise (docs/approval.md): with `approval: [delete]`, a start file "rewritten with garbage
// of the same size" is put back and asked, compared "after every tool call of the work pass" and
// "after the pass, with its sandbox stopped".
//
// What happened (Docker, root runner): the comparisons after the agent's calls missed it (inode,
// size, mtime and ctime as verified after the first call), so the agent's second call read
// `XXXXXXXXXXXX` from data/raw.csv with no request and nothing put back: the pass went on with the
// start data destroyed. Only the comparison after the pass found it ("rewrite data/raw.csv, after
// the agent's last tool call"), most likely because returning the lent folder changes every
// file's ctime; a backend that does not chown (Apptainer, a non-root runner) has no such rescue
// (not run here: the harness image has no python3). Expected: found after the call that did it.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pendingApprovals, runApprovals } from "../../runner/approval/store.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");
const FIXTURES = join(REPO, "test", "fixtures", "attack25");
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!hasEngine("docker"))(
  "A25-1 e2e: a rewrite through a shared mapping (Docker, scripted)",
  () => {
    it("the start file is put back and asked, or never destroyed", async () => {
      const root = mkdtempSync(join(tmpdir(), "scifi-a25-mmap-"));
      roots.push(root);
      const home = join(root, "home");
      const taskDir = join(root, "task");
      mkdirSync(home);
      mkdirSync(join(taskDir, "data"), { recursive: true });
      writeFileSync(join(taskDir, "task.md"), readFileSync(join(FIXTURES, "mmap.md"), "utf8"));
      const start = `energy\n${"1.0\n".repeat(4000)}`;
      writeFileSync(join(taskDir, "data", "raw.csv"), start);
      let out = "";
      const child = spawn(
        process.execPath,
        [CLI, "run", join(taskDir, "task.md"), "--model", `scripted:${join(FIXTURES, "mmap.yaml")}`],
        {
          cwd: root,
          env: { ...process.env, SCIFI_HOME: home, SCIFI_APPROVAL_POLL_MS: "200" },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
      // Deny whatever the guard asks (what a person protecting the data does).
      const asked: string[] = [];
      while (child.exitCode === null) {
        for (const v of pendingApprovals(home)) {
          asked.push(v.request.summary);
          execFileSync(process.execPath, [CLI, "deny", v.runId, v.request.id, "--reason", "keep it"], {
            env: { ...process.env, SCIFI_HOME: home },
          });
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      const code = await exited;
      const runs = readdirSync(join(home, "runs"));
      const requests = runs.flatMap((id) => runApprovals(home, id).map((v) => v.request.summary));
      const now = readFileSync(join(taskDir, "data", "raw.csv"), "utf8");
      const audit = readFileSync(join(home, "runs", runs[0] ?? "", "audit.jsonl"), "utf8");
      expect(
        { code, requests, head: now.slice(0, 12), agentSawGarbage: audit.includes("XXXXXXXXXXXX") },
        out,
      ).toEqual({
        code: 0,
        // Found after a call of the pass (the agent told), not only after the pass.
        requests: ["rewrite data/raw.csv"],
        head: start.slice(0, 12),
        agentSawGarbage: false,
      });
    }, 300_000);
  },
);
