// `scifi check-task` end to end on real Docker: the lazy agents (scripted) and the solution run
// through the same loop, sandboxes and check stages as `scifi run`; the exit code and findings are
// what a user sees. A sound task exits 0 (and a second audit is read from the cache); each kind of
// check that cannot discriminate exits 1 naming the audit and the check; bad input exits 2.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { AuditReport } from "../../runner/check-task/audit.ts";
import { runScifi } from "../helpers/cli.ts";
import { ensureImage, REPO } from "../loop/harness.ts";
import { taskRoot } from "./tasks.ts";

const T = 240_000;

describe("scifi check-task (Docker)", () => {
  const ws = taskRoot();
  beforeAll(() => ensureImage(), 1_800_000);

  const audit = async (task: string, ...more: string[]) => {
    const r = await runScifi(ws.home, ["check-task", join(ws.root, task), "--json", ...more], T);
    return { ...r, report: r.stdout ? (JSON.parse(r.stdout) as AuditReport) : undefined };
  };

  it(
    "a sound task with its solution: exit 0; the second audit comes from the cache",
    async () => {
      const first = await audit("sound", "--solution", ws.solution);
      expect(first.code, first.stderr).toBe(0);
      expect(first.report?.sound).toBe(true);
      expect(first.report?.audits.map((a) => [a.audit, a.status])).toEqual([
        ["untouched", "failed"],
        ["solution", "passed"],
        ["nothing", "failed"],
        ["empty", "failed"],
        ["constants", "failed"],
      ]);
      // The constants agent wrote 42 into answer.txt: the run stage passed, the compare stage did not.
      const constants = first.report?.audits.find((a) => a.audit === "constants");
      expect(constants?.checks.map((c) => [c.id, c.passed])).toEqual([
        ["root/check-1", true],
        ["root/check-2", false],
      ]);
      const t0 = performance.now();
      const again = await runScifi(
        ws.home,
        ["check-task", join(ws.root, "sound"), "--solution", ws.solution],
        T,
      );
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain("cached result");
      expect(again.stdout).toContain("sound: the checks fail for every lazy agent");
      expect(performance.now() - t0).toBeLessThan(15_000);
    },
    T * 2,
  );

  it(
    "checks that pass on the untouched folder: exit 1, the untouched and nothing audits named",
    async () => {
      const r = await audit("nothing-passes");
      expect(r.code).toBe(1);
      const findings = r.report?.findings ?? [];
      expect(findings.map((f) => f.audit)).toEqual(["untouched", "nothing", "constants"]);
      expect(findings[1]?.text).toMatch(
        /^nothing: an agent that does nothing passes: check root\/check-1 passed/,
      );
      expect(findings[0]?.checks).toEqual(["root/check-1"]);
      // The terminal says the same, one line per finding.
      const text = await runScifi(ws.home, ["check-task", join(ws.root, "nothing-passes")], T);
      expect(text.code).toBe(1);
      expect(text.stdout).toContain("3 finding(s):");
      expect(text.stdout).toMatch(/nothing +FINDING +must fail, passed/);
    },
    T * 2,
  );

  it(
    "an Expectation without a check: exit 1, a bare claim passes on the review alone",
    async () => {
      const r = await audit("claim-passes");
      expect(r.code).toBe(1);
      const untouched = r.report?.findings.find((f) => f.audit === "untouched");
      expect(untouched?.text).toContain(
        "untouched: the checks pass on the untouched task folder, so an agent that only claims (report_done) passes: the SAM has no check: the review alone judges it",
      );
    },
    T,
  );

  it(
    "a reference no solution can meet: exit 1, the solution audit names the failing check",
    async () => {
      const r = await audit("solution-fails", "--solution", ws.solution);
      expect(r.code).toBe(1);
      expect(r.report?.findings.map((f) => f.audit)).toEqual(["solution"]);
      expect(r.report?.findings[0]?.text).toMatch(
        /^solution: the solution fails check root\/check-1 \(exit 1\): no agent can pass this task as its checks stand/,
      );
    },
    T,
  );

  it(
    "an imported Harbor task with its solution/ (solve.sh run by the solution agent): sound",
    async () => {
      const harbor = join(REPO, "test", "fixtures", "harbor", "word-count");
      const out = join(ws.root, "word-count");
      // The import audits the imported checks with the task's solution/ as part of the import:
      // sound means every audit held (untouched and the lazy agents failed, solve.sh passed).
      const imported = await runScifi(ws.home, ["import", "harbor", harbor, "-o", out], T);
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.stdout).toContain("audit: sound (scifi check-task with its reference solution)");
      expect(readFileSync(join(out, "harbor-import.md"), "utf8")).toContain(
        "## Audit of the checks (scifi check-task)\n- sound",
      );
      const cacheDir = join(ws.home, "check-task");
      const cached = readdirSync(cacheDir)
        .filter((f) => f.endsWith(".json"))
        .map((f) => JSON.parse(readFileSync(join(cacheDir, f), "utf8")) as AuditReport)
        .find((r) => r.taskDir === out);
      if (!cached) throw new Error(`no cached audit of ${out} in ${cacheDir}`);
      // The hidden tests pass only after solve.sh wrote counts.txt; the constants agent's counts.txt
      // passes the run stage (it exists) and fails the compare stage.
      expect(cached.audits.map((a) => [a.audit, a.status])).toEqual([
        ["untouched", "failed"],
        ["solution", "passed"],
        ["nothing", "failed"],
        ["empty", "failed"],
        ["constants", "failed"],
      ]);
    },
    T,
  );

  it("bad input exits 2 before anything runs: no folder, an invalid SAM, a bad backend, a missing solution", async () => {
    const none = await runScifi(ws.home, ["check-task", join(ws.root, "nope")], 60_000);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("does not exist: give the folder that holds task.md");
    const { writeFileSync, mkdirSync } = await import("node:fs");
    mkdirSync(join(ws.root, "invalid"));
    writeFileSync(
      join(ws.root, "invalid", "task.md"),
      "---\nname: x\niterationz: 2\n---\n# X\n\n## To-do\nA.\n",
    );
    const invalid = await runScifi(ws.home, ["check-task", join(ws.root, "invalid")], 60_000);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/is not a valid SAM/);
    expect(invalid.stderr).toMatch(/task\.md:\d+:\d+: error: .*iterationz/);
    const backend = await runScifi(
      ws.home,
      ["check-task", join(ws.root, "sound"), "--backend", "vm"],
      60_000,
    );
    expect(backend.code).toBe(2);
    expect(backend.stderr).toContain("--backend 'vm' is not a backend: give docker or apptainer");
    const solution = await runScifi(
      ws.home,
      ["check-task", join(ws.root, "sound"), "--solution", join(ws.root, "nope")],
      60_000,
    );
    expect(solution.code).toBe(2);
    expect(solution.stderr).toContain("is not a folder: give the folder whose files solve the task");
  }, 240_000);
});
