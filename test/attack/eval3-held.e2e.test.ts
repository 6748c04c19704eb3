// Attacks on `scifi eval` that held (attacker session eval3; from docs/eval.md).
// 1. Promise ("Durability and resume"): "any other entry of a task folder ... that changed since the
//    eval started is refused on resume, naming the entry"; eval.json records "every entry of the
//    task folder (... walked without following links, names as bytes)". Done: an eval planned and
//    stopped by a budget of 0, then each of: an empty folder added, a hidden dotfile asset edited, a
//    file whose name is not UTF-8 (\xff) renamed to another non-UTF-8 name (\xfe), a link retargeted
//    (same length), a FIFO added. Happened: every resume refused with exit 2, naming the entry.
// 2. Promise ("Budget", "One process drives an eval"): `--budget-usd` on resume is written "under
//    the eval's lock", and a second driver of a live eval "is refused (exit 2) naming the process,
//    before it touches a trial". Done: eval.lock held by a live process (this test's), then
//    `scifi eval --resume <id> --budget-usd 7`; and `--budget-usd -1` / `abc` on a free eval.
//    Happened: exit 2 each time, eval.json's budget untouched.
import { execFileSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";

const TASK = `---
name: eval3-held
iterations: 1
budget_usd: 1
---
# Write out.txt

## To-do
Write out.txt.

## Expectation
- \`out.txt\` exists.
  \`\`\`check timeout=30s
  test -f out.txt
  \`\`\`
`;

const MODEL = `prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }
work:
  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]
review:
  - json: { items: [{ id: root/e1, pass: true, evidence: "ok" }], findings: [], fixes: [], rank_adjustment: 0 }
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

const cli = (home: string, args: string[]) => runScifi(home, args, 300_000);

/** A task folder with a dotfile, a non-UTF-8 name and a link; an eval planned on it and stopped by budget 0. */
async function planned(label: string): Promise<{ root: string; home: string; task: string; evalId: string }> {
  const root = mkdtempSync(join(tmpdir(), `eval3-held-${label}-`));
  const task = join(root, "tasks", "a");
  mkdirSync(task, { recursive: true });
  writeFileSync(join(task, "task.md"), TASK);
  writeFileSync(join(task, ".hidden"), "one\n");
  writeFileSync(Buffer.from(`${task}/\xff`, "latin1"), "x\n");
  symlinkSync("aa", join(task, "link"));
  writeFileSync(join(root, "m.yaml"), MODEL);
  const home = join(root, "home");
  mkdirSync(home);
  const first = await cli(home, [
    "eval",
    join(root, "tasks"),
    "--models",
    `scripted:${join(root, "m.yaml")}`,
    "--budget-usd",
    "0",
  ]);
  expect(first.code).toBe(1);
  return { root, home, task, evalId: readdirSync(join(home, "evals"))[0] as string };
}

describe.skipIf(!hasEngine("docker"))("eval3: attacks that held", () => {
  const changes: Array<[string, (task: string) => void, RegExp]> = [
    ["an empty folder added", (t) => mkdirSync(join(t, "empty")), /empty is new/],
    ["a hidden dotfile edited", (t) => writeFileSync(join(t, ".hidden"), "two\n"), /\.hidden changed/],
    [
      "a non-UTF-8 name renamed to another",
      (t) => renameSync(Buffer.from(`${t}/\xff`, "latin1"), Buffer.from(`${t}/\xfe`, "latin1")),
      /\\xff is gone/,
    ],
    [
      "a link retargeted",
      (t) => {
        rmSync(join(t, "link"));
        symlinkSync("bb", join(t, "link"));
      },
      /link changed/,
    ],
    ["a FIFO added", (t) => void execFileSync("mkfifo", [join(t, "fifo")]), /fifo is new/],
  ];
  for (const [what, change, named] of changes)
    it(`resume refuses a task folder with ${what}`, async () => {
      const { home, task, evalId } = await planned(what.replace(/\W+/g, "-"));
      change(task);
      const resumed = await cli(home, ["eval", "--resume", evalId, "--budget-usd", "0"]);
      expect(resumed.code).toBe(2);
      expect(resumed.stderr).toMatch(named);
    }, 300_000);

  it("--budget-usd on the resume of a live eval is refused and not written; bad budgets are refused", async () => {
    const { home, evalId } = await planned("lock");
    const evalDir = join(home, "evals", evalId);
    const planBefore = readFileSync(join(evalDir, "eval.json"), "utf8");
    writeFileSync(
      join(evalDir, "eval.lock"),
      JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), evalId }),
    );
    const live = await cli(home, ["eval", "--resume", evalId, "--budget-usd", "7"]);
    expect(live.code).toBe(2);
    expect(live.stderr).toContain(`process ${process.pid}`);
    expect(readFileSync(join(evalDir, "eval.json"), "utf8")).toBe(planBefore);
    rmSync(join(evalDir, "eval.lock"));
    for (const bad of ["-1", "abc", "NaN", "Infinity"]) {
      const r = await cli(home, ["eval", "--resume", evalId, "--budget-usd", bad]);
      expect(r.code).toBe(2);
      expect(readFileSync(join(evalDir, "eval.json"), "utf8")).toBe(planBefore);
    }
  }, 300_000);
});
