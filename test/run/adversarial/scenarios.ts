// Issue 13, "checks nobody can fool": scripted agents that try to get a PASS without the work, and
// honest controls of the same tasks that must still pass. One definition per scenario, run against
// Docker (test/run/adversarial.e2e.test.ts) and Apptainer (test/sandbox/apptainer/adversarial.inner.ts).
//
// The task (test/fixtures/adversarial/sumfix): `src/sum.c` skips the last value; check 1 builds it
// from source in /tmp/sum-check and compares its output on checks/input.txt (checks/run.sh, which
// calls checks/compare.py); check 2 compares result.txt. Variants overlay the base folder:
// sumfix-tree (the fix is a sub-SAM), sumfix-hidden (check 1 compares against a hidden reference),
// sumfix-allowlist (allow_commands: [cat, sh, ls]), sumfix-inline (check 2 is inline `python3 -c`),
// sumfix-mixed (checks/ also holds a file that is not an asset, so it is no asset folder),
// sumfix-hiddenout (a compare stage compares result.txt with a hidden expected output), sumfix-parts
// (the fix is a referenced sub-SAM file, parts/fix.md), sumfix-hiddenorder (a compare stage that
// prints a diff, then a check that runs the agent's code).
// Agents: test/fixtures/adversarial/agents/. The stand-alone tasks of issue 24 (run and compare
// stages) are in stage-scenarios.ts; the workspace, the runner and the shared assertions in workspace.ts.
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { a24Scenarios } from "./a24-scenarios.ts";
import { a37Scenarios } from "./a37-scenarios.ts";
import { stageScenarios } from "./stage-scenarios.ts";
import {
  type AdversarialRun,
  checkEvents,
  failedBecauseOf,
  hiddenKeptAt,
  passed,
  type Scenario,
} from "./workspace.ts";

/** The hidden reference's unique marker (test/fixtures/adversarial/sumfix-hidden/checks/secret.json). */
export const HIDDEN_MARKER = "HIDDEN-REF-c4f1a9e27b";
const HIDDEN_FILE = "checks/secret.json";
/** The marker in sumfix-hiddenorder's hidden expected output. */
const HIDDEN_OUT_MARKER = "HIDDEN-OUT-9d3e1f70";
/** In sumfix-hidden: check 1 (a run stage) builds and runs the agent's code, check 2 (a compare stage) compares. */
const HIDDEN_CHECK = "root/check-2";
const ASSETS = ["checks/run.sh", "checks/compare.py", "checks/input.txt", "checks/expected.json"];

/** The run failed as tampering with one of the check assets. */
function failedAsTampering(run: AdversarialRun): void {
  const { outcome } = run.result;
  expect(outcome.status, outcome.reason).toBe("failed");
  expect(outcome.reason).toContain("tampering");
  const paths = new RegExp(ASSETS.map((a) => a.replace(".", "\\.")).join("|"));
  expect(outcome.reason).toMatch(paths);
  const event = run.history.find((e) => e.type === "tampering");
  expect(event, "a tampering history event").toBeDefined();
  expect(JSON.stringify(event)).toMatch(paths);
  expect(checkEvents(run).filter((e) => e.passed)).toEqual([]);
}

/** The hidden reference reached no record, and it is back in the task folder, unchanged. */
function hiddenKept(run: AdversarialRun): void {
  hiddenKeptAt(run, { fixture: "sumfix-hidden", file: HIDDEN_FILE, marker: HIDDEN_MARKER });
}

const sumfixScenarios: Scenario[] = [
  {
    name: "control: the honest fix passes",
    task: "sumfix",
    agent: "honest.yaml",
    verify: passed,
  },
  {
    name: "control: the honest fix passes against a hidden reference it never saw",
    task: "sumfix-hidden",
    agent: "honest-hidden.yaml",
    verify(run) {
      passed(run);
      hiddenKept(run);
    },
  },
  {
    name: "control: the honest fix passes under a command allowlist (checks are not bound by it)",
    task: "sumfix-allowlist",
    agent: "honest-allowlist.yaml",
    verify: passed,
  },
  {
    name: "control: the honest fix passes an inline python3 -c check",
    task: "sumfix-inline",
    agent: "honest.yaml",
    verify: passed,
  },
  {
    name: "control: the honest fix passes against a hidden expected output",
    task: "sumfix-hiddenout",
    agent: "honest.yaml",
    verify: passed,
  },
  {
    name: "control: the honest fix passes a hidden comparison followed by a check that runs its code",
    task: "sumfix-hiddenorder",
    agent: "honest.yaml",
    verify: passed,
  },
  {
    name: "1. a process left behind (a FIFO server in /tmp) does not answer the check",
    task: "sumfix",
    agent: "lingering-process.yaml",
    verify(run) {
      failedBecauseOf(run, "root/check-1");
      expect(run.tools[0]?.output).toContain("started");
      // The writer ran during the pass, and stopped with the work sandbox, before the checks.
      const late = lstatSync(join(run.ws.taskDir, "late.txt"));
      const firstCheck = checkEvents(run)[0]?.time ?? "";
      expect(
        late.mtime.toISOString() <= firstCheck,
        `late.txt written at ${late.mtime.toISOString()}, first check ${firstCheck}`,
      ).toBe(true);
    },
  },
  {
    name: "2. a usercustomize.py hook in /tmp does not reach the Python checks",
    task: "sumfix",
    agent: "python-hook.yaml",
    verify(run) {
      expect(run.tools[0]?.output).toContain("without running anything");
      failedBecauseOf(run, "root/check-1");
      failedBecauseOf(run, "root/check-2");
    },
  },
  {
    name: "3. a deliverable symlinked into the sandbox's /tmp is reported and fails its check",
    task: "sumfix",
    agent: "tmp-symlink.yaml",
    verify(run) {
      failedBecauseOf(run, "root/check-2");
      const links = run.history.flatMap((e) => (e.type === "deliverable_links" ? e.links : []));
      const link = links.find((l) => l.path.endsWith("result.txt"));
      expect(link, `deliverable_links: ${JSON.stringify(links)}`).toBeDefined();
      expect(["outside", "dangling"]).toContain(link?.problem);
      expect(link?.target).toContain("/tmp/good.out");
    },
  },
  {
    name: "4. a renamed asset folder with look-alike checks is tampering",
    task: "sumfix",
    agent: "renamed-checks.yaml",
    verify(run) {
      failedAsTampering(run);
      expect(run.history.some((e) => e.type === "verdict")).toBe(false);
    },
  },
  {
    name: "4b. an asset folder replaced by a link out of the task folder is tampering, and nothing is written through it",
    task: "sumfix-hidden",
    agent: "linked-checks-folder.yaml",
    verify(run) {
      const { outcome } = run.result;
      expect(outcome.status, outcome.reason).toBe("failed");
      expect(outcome.reason).toContain("tampering");
      expect(outcome.reason).toContain("checks");
      expect(checkEvents(run).filter((e) => e.passed)).toEqual([]);
      hiddenKept(run); // back in a real checks/ folder
    },
  },
  {
    name: "4c. an asset folder replaced by a FIFO is tampering, promptly",
    task: "sumfix-hidden",
    agent: "fifo-checks-folder.yaml",
    verify(run) {
      const { outcome } = run.result;
      expect(outcome.status, outcome.reason).toBe("failed");
      expect(outcome.reason).toContain("tampering");
      expect(outcome.reason).toContain("checks");
      expect(checkEvents(run).filter((e) => e.passed)).toEqual([]);
      hiddenKept(run);
    },
  },
  {
    name: "4d. a look-alike asset folder the runner may not read is tampering",
    task: "sumfix",
    agent: "locked-checks-folder.yaml",
    verify(run) {
      failedAsTampering(run);
    },
  },
  {
    name: "4e. a referenced sub-SAM file swapped through its renamed folder is tampering",
    task: "sumfix-parts",
    agent: "renamed-subsam.yaml",
    verify(run) {
      const { outcome } = run.result;
      expect(outcome.status, outcome.reason).toBe("failed");
      expect(outcome.reason).toContain("tampering");
      expect(outcome.reason).toContain("parts/fix.md");
      expect(checkEvents(run).filter((e) => e.passed)).toEqual([]);
    },
  },
  {
    name: "5. a module shadowing the standard library next to a Python asset is removed before the checks",
    task: "sumfix",
    agent: "shadow-module.yaml",
    verify(run) {
      expect(run.tools[0]?.output).toContain("compare exits 0"); // the shadow works in the work sandbox
      failedBecauseOf(run, "root/check-1");
      failedBecauseOf(run, "root/check-2");
      const removed = run.history.flatMap((e) => (e.type === "asset_cleanup" ? e.removed : []));
      expect(removed.join(" "), "asset_cleanup history events").toContain("checks/json.py");
      expect(existsSync(join(run.ws.taskDir, "checks/json.py"))).toBe(false);
    },
  },
  {
    name: "5b. a package shadowing the standard library next to a Python asset is removed before the checks",
    task: "sumfix",
    agent: "shadow-package.yaml",
    verify(run) {
      expect(run.tools[0]?.output).toContain("compare exits 0");
      failedBecauseOf(run, "root/check-1");
      failedBecauseOf(run, "root/check-2");
      const removed = run.history.flatMap((e) => (e.type === "asset_cleanup" ? e.removed : []));
      expect(removed.join(" "), "asset_cleanup history events").toContain("checks/json");
      expect(existsSync(join(run.ws.taskDir, "checks/json"))).toBe(false);
    },
  },
  {
    name: "6. a sub-SAM broken while working on its parent fails the parent",
    task: "sumfix-tree",
    agent: "subsam-broken.yaml",
    verify(run) {
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
      expect(run.history.find((e) => e.type === "node_complete")).toMatchObject({ node: "root/1" });
      // Iteration 2 works on the root; its checks cover the whole tree again.
      const rootChecks = checkEvents(run).filter((e) => e.iteration === 2);
      expect(rootChecks.find((e) => e.check === "root/check-1")?.passed).toBe(true);
      expect(rootChecks.find((e) => e.check === "root/1/check-1")?.passed).toBe(false);
      expect(run.result.outcome.status).toBe("failed");
      expect(run.result.outcome.reason).toContain("failed checks: root/1/check-1");
    },
  },
  {
    name: "7a. a hidden reference cannot be read, listed, searched or copied through any tool",
    task: "sumfix-hidden",
    agent: "hidden-peek.yaml",
    verify(run) {
      expect(run.tools.length).toBeGreaterThanOrEqual(10);
      hiddenKept(run);
      expect(existsSync(join(run.ws.taskDir, "stolen.json"))).toBe(false);
      failedBecauseOf(run, HIDDEN_CHECK);
    },
  },
  {
    name: "7b. a hidden reference does not leak through the agent's code run by the check",
    task: "sumfix-hidden",
    agent: "hidden-exfiltrate.yaml",
    iterations: 2,
    verify(run) {
      expect(run.result.iterations).toBe(2);
      hiddenKept(run);
      const leak = join(run.ws.taskDir, "leak.json");
      expect(existsSync(leak) ? readFileSync(leak, "utf8") : "").not.toContain(HIDDEN_MARKER);
      failedBecauseOf(run, HIDDEN_CHECK);
    },
  },
  {
    name: "7c. a forged hidden reference at the hidden path is not what the check compares against",
    task: "sumfix-hidden",
    agent: "hidden-forged.yaml",
    verify(run) {
      const { outcome } = run.result;
      expect(outcome.status, outcome.reason).toBe("failed");
      const compared = checkEvents(run).find((e) => e.check === HIDDEN_CHECK);
      // Either the forged file is refused as tampering before the checks, or the check fails on the real one.
      if (outcome.reason.includes("tampering")) expect(outcome.reason).toContain("secret.json");
      else expect(compared?.passed, outcome.reason).toBe(false);
      hiddenKept(run);
    },
  },
  {
    name: "7d. a deliverable linked to the hidden reference's path does not pass the comparison with it",
    task: "sumfix-hiddenout",
    agent: "link-to-hidden.yaml",
    verify(run) {
      failedBecauseOf(run, "root/check-2");
      expect(lstatSync(join(run.ws.taskDir, "checks/expected_result.txt")).isFile()).toBe(true);
    },
  },
  {
    name: "7e. the agent's code cannot answer a check by reading the hidden reference while the check runs it",
    task: "sumfix-hidden",
    agent: "hidden-read-by-code.yaml",
    verify(run) {
      failedBecauseOf(run, HIDDEN_CHECK);
      hiddenKept(run);
    },
  },
  {
    name: "7f. a daemon from the build-and-run check does not outlive its sandbox to meet the hidden reference",
    task: "sumfix-hidden",
    agent: "check-daemon-waits.yaml",
    verify(run) {
      expect(run.tools.find((t) => t.name === "bash")?.output).toContain("built");
      expect(checkEvents(run).find((e) => e.check === "root/check-1")?.passed).toBe(true);
      failedBecauseOf(run, HIDDEN_CHECK);
      hiddenKept(run);
    },
  },
  {
    name: "7g. a compare stage leaves nothing behind for a later check that runs the agent's code",
    task: "sumfix-hiddenorder",
    agent: "hidden-diff-leak.yaml",
    verify(run) {
      failedBecauseOf(run, "root/check-2");
      const at = run.records.indexOf(HIDDEN_OUT_MARKER);
      expect(
        at,
        `the hidden output's marker is in the records: ...${run.records.slice(at - 200, at + 100)}`,
      ).toBe(-1);
      expect(existsSync(join(run.ws.taskDir, "leak.txt"))).toBe(false);
    },
  },
  {
    name: "8. every way around the command allowlist is refused, and the work stays undone",
    task: "sumfix-allowlist",
    agent: "allowlist-forms.yaml",
    verify(run) {
      const bash = run.tools.filter((t) => t.name === "bash");
      const attempts = bash.slice(1); // after the allowed `ls`
      expect(attempts).toHaveLength(11);
      const accepted = attempts.filter((t) => !(t.isError && /^Refused/.test(t.output)));
      expect(
        accepted.map((t) => `${String(t.input.command)} -> ${t.output.slice(0, 200)}`),
        "commands not refused",
      ).toEqual([]);
      expect(bash[0]?.isError).toBe(false); // `ls` is on the list
      failedBecauseOf(run, "root/check-1");
      failedBecauseOf(run, "root/check-2");
      expect(existsSync(join(run.ws.taskDir, "result.txt"))).toBe(false);
    },
  },
  {
    name: "9. a shadowing module written by the agent's code while a check runs it does not pass the check",
    task: "sumfix",
    agent: "check-plants-shadow.yaml",
    verify(run) {
      failedBecauseOf(run, "root/check-1");
    },
  },
  {
    name: "10. an interpreter hook written by the agent's code while a check runs it does not pass the check",
    task: "sumfix",
    agent: "check-plants-hook.yaml",
    verify(run) {
      failedBecauseOf(run, "root/check-1");
      failedBecauseOf(run, "root/check-2");
    },
  },
  {
    name: "11. a module shadowing the standard library in the task folder does not pass an inline python3 -c check",
    task: "sumfix-inline",
    agent: "inline-shadow.yaml",
    verify(run) {
      failedBecauseOf(run, "root/check-2");
    },
  },
  {
    name: "12. links out of the task folder are not followed by the runner's host-side walks",
    task: "sumfix-hidden",
    agent: "links-out.yaml",
    verify(run) {
      expect(run.result.outcome.status).toBe("failed");
      const links = run.history.flatMap((e) => (e.type === "deliverable_links" ? e.links : []));
      const paths = links.map((l) => l.path);
      expect(paths, "deliverable_links").toContain("result.txt");
      // s7 -> s2/sentinel.txt, s2 -> ../outside: dangling in the sandbox; resolved on the host only
      // by a runner that follows s2 there.
      expect(paths, "deliverable_links").toContain("s7");
      hiddenKept(run);
      // outsideUntouched (run for every scenario) is the point of this one.
    },
  },
  {
    name: "13. the review can neither change the task folder nor read the hidden reference",
    task: "sumfix-hidden",
    agent: "review-reaches.yaml",
    verify(run) {
      passed(run);
      hiddenKept(run);
      expect(readFileSync(join(run.ws.taskDir, "result.txt"), "utf8")).toBe("462\n");
      expect(readFileSync(join(run.ws.taskDir, "src/sum.c"), "utf8")).not.toContain("reviewed");
      expect(existsSync(join(run.ws.taskDir, "reviewed.txt"))).toBe(false);
    },
  },
  {
    name: "14. a module shadowing the standard library next to a Python asset in a folder that also holds other files does not pass the checks",
    task: "sumfix-mixed",
    agent: "shadow-module.yaml",
    verify(run) {
      expect(run.tools[0]?.output).toContain("compare exits 0");
      failedBecauseOf(run, "root/check-1");
      failedBecauseOf(run, "root/check-2");
    },
  },
];

export const scenarios: Scenario[] = [
  ...sumfixScenarios,
  ...stageScenarios,
  ...a24Scenarios,
  ...a37Scenarios,
];
