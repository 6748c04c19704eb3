// What the issue-37 output-format attacks share: a task folder holding the hidden reference, a
// grader's Python run on it in the real image (what a compare stage would run), and the guard's
// verdict on the output as the runner copies it out.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { outputFormatProblem } from "../../runner/run/checks/output-formats.ts";

/** A task folder with the reference (42.125) at checks/expected.txt and an out/ folder. */
export function referenceTask(prefix: string): string {
  const task = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(task, "checks"));
  mkdirSync(join(task, "out"), { mode: 0o777 });
  writeFileSync(join(task, "checks", "expected.txt"), "42.125\n");
  return task;
}

/** Runs `script` with python3 in scifi-sci:local, the task at /task (read-only unless `writable`). */
export function grader(task: string, script: string, writable = false): string {
  return execFileSync(
    "docker",
    [
      "run",
      "--rm",
      "--network=none",
      "-v",
      `${task}:/task${writable ? "" : ":ro"}`,
      "scifi-sci:local",
      "python3",
      "-c",
      script,
    ],
    { encoding: "utf8" },
  );
}

/** The guard's problem with `data` copied out as `rel`, the hidden reference named as a run names it. */
export function refusal(rel: string, data: Buffer): string | undefined {
  return outputFormatProblem(rel, data, { hiddenNames: ["checks/expected.txt", "expected.txt"] });
}
