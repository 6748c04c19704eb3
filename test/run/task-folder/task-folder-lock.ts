// The task-folder lock tests' pieces (Docker: task-folder-lock.e2e.test.ts; Apptainer, in the
// harness: test/sandbox/apptainer/task-folder-lock.inner.ts): a one-check task, a scripted model
// whose work waits for a file the test writes, the CLI as a child, and a folder's owners.
import { type ChildProcess, spawn } from "node:child_process";
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { REPO } from "../harness.ts";

export const CLI = join(REPO, "bin", "scifi.js");

export const TASK = `---
name: held
iterations: 1
budget_usd: 1
---
# Write out.txt

## To-do
Write a file called out.txt.

## Expectation
- \`out.txt\` exists.
  \`\`\`check timeout=30s
  test -f out.txt
  \`\`\`
`;

/** Works until the test writes `release` into the task folder (at most 150 s), then passes. */
export const HOLD = `prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }
work:
  - tool_calls: [{ name: bash, input: { timeout_sec: 170, command: "for i in $(seq 1500); do test -f release && break; sleep 0.1; done; echo ok > out.txt" } }]
  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]
review:
  - json: { items: [{ id: root/e1, pass: true, evidence: "out.txt" }], findings: [], fixes: [], rank_adjustment: 0 }
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

export interface Ran {
  code: number | null;
  out: string;
}

export function scifi(
  home: string,
  args: string[],
  cwd = REPO,
  env: NodeJS.ProcessEnv = {},
): { child: ChildProcess; done: Promise<Ran> } {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...process.env, ...env, SCIFI_HOME: home },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const done = new Promise<Ran>((resolve) => child.once("exit", (code) => resolve({ code, out })));
  return { child, done };
}

/** Every entry under `dir` (the folder included) with its owner. */
export function owners(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    const stat = lstatSync(join(dir, rel));
    out[rel || "."] = `${stat.uid}:${stat.gid}`;
    if (stat.isDirectory()) for (const name of readdirSync(join(dir, rel))) walk(join(rel, name));
  };
  walk("");
  return out;
}
