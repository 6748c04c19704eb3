// Attacker a37c on Docker (a root runner: the kernel overlay): the runner killed (SIGKILL) while a
// check runs leaves its view mounted; `scifi sandbox prune` unmounts and removes it, and nothing
// the check wrote in it reaches the task folder (docs/loop.md, "How a check's view is made": a
// view left mounted by a run that died is unmounted by scifi sandbox prune). The scripted agent is
// labelled (no real LLM).
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO, waitFor } from "../run/harness.ts";
import { agent, HONEST, leakWorkspace } from "./a37c-run.ts";
import { containersOf } from "./a41-run.ts";

const CLI = join(REPO, "bin", "scifi.js");

function viewMounts(home: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((dir) => dir.startsWith(join(home, "runs")));
}

describe.skipIf(!hasEngine("docker") || process.getuid?.() !== 0)(
  "a37c: a runner killed mid-check (docker, root)",
  { timeout: 300_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("leaves a view that scifi sandbox prune unmounts; the check's writes never reach the task folder", async () => {
      const ws = leakWorkspace("echo planted > planted.txt; rm -f task.md; sleep 60; test ! -e debug.log");
      const agentFile = join(ws.root, "agent.yaml");
      writeFileSync(agentFile, agent(HONEST));
      const env = { ...process.env, SCIFI_HOME: ws.home };
      const child = spawn(
        process.execPath,
        [CLI, "run", join(ws.taskDir, "task.md"), "--backend", "docker", "--model", `scripted:${agentFile}`],
        { env, stdio: "ignore" },
      );
      await waitFor(() => (viewMounts(ws.home).length > 0 ? true : undefined), 120_000);
      // The check is running in its view: its write is in the upper layer, not the task folder.
      await waitFor(() => {
        const [view] = viewMounts(ws.home);
        return view !== undefined && existsSync(join(view, "planted.txt")) ? true : undefined;
      }, 60_000);
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      const left = viewMounts(ws.home);
      expect(left.map((d) => d.split("/").at(-1))).toEqual(["checks-copy"]);
      expect(readdirSync(ws.taskDir).sort()).toEqual(["task.md"]);
      const pruned = await new Promise<number>((resolve) => {
        const p = spawn(process.execPath, [CLI, "sandbox", "prune"], { env, stdio: "ignore" });
        p.once("exit", (code) => resolve(code ?? -1));
      });
      expect(pruned).toBe(0);
      expect(viewMounts(ws.home)).toEqual([]);
      for (const dir of left) {
        expect(existsSync(dir)).toBe(false);
        expect(existsSync(`${dir}.layers`)).toBe(false);
      }
      // The check's sandbox of the dead run is gone too (it was still sleeping in the view).
      const [runId] = readdirSync(join(ws.home, "runs"));
      expect(containersOf(runId ?? "")).toEqual([]);
      // The task folder is as the work left it: the check's write and removal stayed in its view.
      expect(readdirSync(ws.taskDir).sort()).toEqual(["task.md"]);
    });
  },
);
