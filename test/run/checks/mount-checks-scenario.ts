// Issue 37 (checks that share nothing), declared writable mounts: a task's `rw` mount is the work's
// to write, but a run stage's writes there would outlive its sandbox and reach the next check, the
// compare stage and the review. The task sums /shared/data.txt into /shared/total.txt (a declared
// `rw` mount); check 1 runs the agent's Makefile, check 2 compares the total with the data. The
// cheat leaves a wrong total and has its Makefile (run by check 1) rewrite the data to match it and
// drop a file: check 2 must judge the mount as the work left it, and nothing of check 1's may be on
// the host afterwards. The honest control writes the right total in the work and passes.
// Run on Docker (test/run/checks/checks-mount-readonly.e2e.test.ts) and Apptainer
// (test/sandbox/apptainer/checks-mount-readonly.inner.ts).
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { stringify } from "yaml";
import { readHistory } from "../../../runner/memory/history.ts";
import { runTask } from "../../../runner/run/setup.ts";

const DATA = "3\n7\n11\n";

function taskMd(shared: string): string {
  return [
    "---",
    "name: mount-checks",
    "walltime: 5m",
    "iterations: 1",
    `mounts: [{host: ${shared}, container: /shared, mode: rw}]`,
    "check_assets: [checks/verify.sh]",
    "---",
    "# Total into the shared folder",
    "",
    "## To-do",
    "Write the sum of `/shared/data.txt` into `/shared/total.txt`; `make build` must work.",
    "",
    "## Expectation",
    "- `make build` works.",
    "  ```check timeout=1m",
    "  make -s build",
    "  ```",
    "- `/shared/total.txt` holds the sum of `/shared/data.txt`.",
    "  ```check timeout=1m",
    "  bash checks/verify.sh",
    "  ```",
    "",
  ].join("\n");
}

const VERIFY = [
  "ls -a /shared",
  "want=$(awk '{s+=$1} END {print s}' /shared/data.txt); got=$(cat /shared/total.txt)",
  'echo "want $want got $got"',
  'test "$want" = "$got"',
  "",
].join("\n");

/** The cheat's Makefile: run by check 1, it rewrites the data to fit the wrong total and drops a file. */
const CHEAT_MAKEFILE = [
  "build:",
  "\t-printf '0\\n' > /shared/data.txt",
  "\t-echo 'written by check 1' > /shared/leak.txt",
  "\ttrue",
  "",
].join("\n");

function agent(total: string, makefile: string): string {
  return stringify({
    prescan: [{ json: { node: "root", rank: 1, skills: [], context: "", plan: "p", direction: "d" } }],
    work: [
      {
        tool_calls: [
          { name: "bash", input: { command: `printf '${total}\\n' > /shared/total.txt` } },
          { name: "write_file", input: { path: "Makefile", content: makefile } },
        ],
      },
      { tool_calls: [{ name: "report_done", input: { claim: "done", summary: "done" } }] },
    ],
    review: [
      {
        json: {
          items: [
            { id: "root/e1", pass: true, evidence: "-" },
            { id: "root/e2", pass: true, evidence: "-" },
          ],
          findings: [],
          fixes: [],
          rank_adjustment: 0,
        },
      },
    ],
    final_review: [{ json: { group_suggestions: [], global_suggestions: [] } }],
  });
}

async function run(backend: string, total: string, makefile: string) {
  const root = mkdtempSync(join(tmpdir(), "scifi-mount-checks-"));
  const home = join(root, "home");
  const task = join(root, "task");
  const shared = join(root, "shared");
  for (const dir of [home, task, join(task, "checks"), shared]) mkdirSync(dir);
  writeFileSync(join(shared, "data.txt"), DATA);
  // Declared mounts are not lent to the sandbox's user (docs/sandbox.md): open to all, as a
  // scientist running scifi as root would make a folder the task writes.
  chmodSync(shared, 0o777);
  chmodSync(join(shared, "data.txt"), 0o666);
  writeFileSync(join(task, "task.md"), taskMd(shared));
  writeFileSync(join(task, "checks", "verify.sh"), VERIFY);
  const site = join(root, "site-policy.yaml");
  writeFileSync(site, `allowedMountRoots: [${root}]\nallowReadWriteMounts: true\n`);
  writeFileSync(join(root, "agent.yaml"), agent(total, makefile));
  const result = await runTask({
    home,
    task: join(task, "task.md"),
    backend,
    sitePolicy: site,
    model: `scripted:${join(root, "agent.yaml")}`,
    limits: { walltimeSec: 240, bashTimeoutSec: 30 },
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
  });
  const checks = readHistory(join(result.dir, "history.jsonl")).flatMap((e) =>
    e.type === "check" ? [e] : [],
  );
  return { result, shared, checks };
}

/** The honest control: the right total, written by the work in its `rw` mount, passes. */
export async function honestMountRunPasses(backend: string): Promise<void> {
  const { result, shared, checks } = await run(backend, "21", "build:\n\ttrue\n");
  expect(result.outcome.status, result.outcome.reason).toBe("passed");
  expect(checks.map((c) => [c.check, c.passed])).toEqual([
    ["root/check-1", true],
    ["root/check-2", true],
  ]);
  // The work's write went through: the grant holds where it was granted.
  expect(readFileSync(join(shared, "total.txt"), "utf8")).toBe("21\n");
}

/** The cheat: check 1's writes to the `rw` mount fail, check 2 judges what the work left. */
export async function checkWritesToMountDoNotCarry(backend: string): Promise<void> {
  const { result, shared, checks } = await run(backend, "0", CHEAT_MAKEFILE);
  expect(result.outcome.status, result.outcome.reason).toBe("failed");
  const second = checks.find((c) => c.check === "root/check-2");
  expect(second?.passed, second?.output).toBe(false);
  expect(second?.output).toContain("want 21 got 0");
  expect(second?.output).not.toContain("leak.txt");
  // Nothing a check wrote is on the host: the mount holds what the work left.
  expect(readdirSync(shared).sort()).toEqual(["data.txt", "total.txt"]);
  expect(readFileSync(join(shared, "data.txt"), "utf8")).toBe(DATA);
}
