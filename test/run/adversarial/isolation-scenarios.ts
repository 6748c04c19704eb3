// Issue 37, item 1: every run stage on a view of its own, in a sandbox of its own. One task
// (test/fixtures/adversarial/iso-checks): three run stages; check 2 runs the verifier in checks/,
// check 3 the one in the asset-only folder tools/verify (its parent tools/ holds a file that is not
// an asset). The cheat's Makefile, run by check 1, leaves a process that ptrace-attaches to the next
// verifier and forges its exit status (check 2), renames tools/ and plants a look-alike verifier
// (check 3), and writes leak.txt; the honest control passes. Against the shared check sandbox of
// before, check 2 passed on a forged status and check 3 on the plant.
// Run on Docker (test/run/checks/checks-isolated.e2e.test.ts) and Apptainer
// (test/sandbox/apptainer/checks-isolated.inner.ts).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { readState } from "../../../runner/run-folder/state.ts";
import {
  type AdversarialRun,
  checkEvents,
  FIXTURES,
  passed,
  type Scenario,
  workToolExchanges,
} from "./workspace.ts";

const REAL = "verifier: the runner's copy";

function check(run: AdversarialRun, id: string) {
  const event = checkEvents(run).find((e) => e.check === id);
  expect(event, `no history event for ${id}`).toBeDefined();
  return event as NonNullable<typeof event>;
}

/** The task folder holds what the work left: nothing a check wrote, renamed or planted. */
function deliveredAsWorkLeft(run: AdversarialRun): void {
  const names = readdirSync(run.ws.taskDir);
  for (const left of ["leak.txt", ".tools-moved", "out"]) {
    expect(names, `${left} reached the delivered folder`).not.toContain(left);
  }
  expect(readdirSync(join(run.ws.taskDir, "tools")).sort()).toEqual(["README.md", "verify"]);
  for (const rel of ["tools/verify/verify.py", "tools/verify/expected.txt", "checks/verify.py"]) {
    expect(readFileSync(join(run.ws.taskDir, rel), "utf8"), rel).toBe(
      readFileSync(join(FIXTURES, "iso-checks", rel), "utf8"),
    );
  }
  const flagged = run.history.filter((e) => e.type === "tampering" || e.type === "asset_cleanup");
  expect(flagged, "the checks' changes are nobody's to restore").toEqual([]);
}

export const isolationScenarios: Scenario[] = [
  {
    name: "control (isolation): an honest fix passes three checks, each on a view of its own",
    task: "iso-checks",
    agent: "iso-honest.yaml",
    verify(run) {
      passed(run);
      expect(checkEvents(run).map((e) => e.check)).toEqual(["root/check-1", "root/check-2", "root/check-3"]);
      const third = check(run, "root/check-3").output ?? "";
      expect(third).toContain(REAL);
      expect(third).toContain("mean matches");
      // check 1's `make build` wrote out/ in its own view; check 3's view never had it.
      expect(third.split("\n")).not.toContain("out");
      deliveredAsWorkLeft(run);
      // Each view was copy-on-write, not a copy (runner/run/checks/check-view.ts): the kernel overlay for a
      // root runner (Docker here), fuse-overlayfs for a runner that is not (Apptainer in the harness).
      const state = readState(join(run.result.dir, "state.json"));
      const expected = process.getuid?.() === 0 ? "overlay" : "fuse-overlayfs";
      expect(state.checks?.map((c) => c.view)).toEqual([expected, expected, expected]);
    },
  },
  {
    name: "a process left by check 1 ptraces later verifiers, and check 1 plants a look-alike verifier above the asset folder and a file: none of it reaches check 2, check 3, the review or the delivered folder",
    task: "iso-checks",
    agent: "iso-cross-check.yaml",
    verify(run) {
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
      for (const id of ["root/check-2", "root/check-3"]) {
        const event = check(run, id);
        // The runner's verifier ran (not the plant) and its exit status is its own (not forged).
        expect(event.passed, `${id} passed:\n${event.output}`).toBe(false);
        expect(event.exitCode).toBe(1);
        expect(event.output).toContain(REAL);
        expect(event.output).toContain("max error 0.5 is above 2e-4");
      }
      const listed = check(run, "root/check-3").output ?? "";
      expect(listed).not.toContain("leak.txt");
      expect(listed).not.toContain(".tools-moved");
      expect(listed).toContain(".lurk.py"); // the work's files are there: the view is the task folder
      const review = workToolExchanges(join(run.result.dir, "audit.jsonl"), "review")
        .filter((t) => t.name === "bash")
        .map((t) => t.output)
        .join("\n");
      expect(review).toContain("REVIEW-LISTED");
      expect(review).not.toContain("written by check 1");
      expect(review).not.toContain(".tools-moved");
      deliveredAsWorkLeft(run);
      expect(existsSync(join(run.ws.taskDir, ".lurk.py"))).toBe(true);
    },
  },
];
