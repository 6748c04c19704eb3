// The examples' checks are real: in the sandbox image (scifi-sci:local: verilator, gfortran,
// python3 with numpy/scipy/pandas/matplotlib, no ROOT) each example's checks, taken from the parsed
// SAM, fail on the example as shipped and all pass after a known-good solution
// (test/fixtures/sam/solutions/<example>/: files copied over the example, then solve.sh).
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseSamSync } from "../../runner/sam/parse.ts";
import type { Check, SamNode } from "../../runner/sam/types.ts";
import { hasEngine } from "../helpers/engines.ts";

const IMAGE = "scifi-sci:local";
const repo = join(import.meta.dirname, "..", "..");
const EXAMPLES = [
  "gfortran-build-run",
  "pandas-csv-aggregation",
  "root-gaussian-fit",
  "two-level-subsams",
  "verilator-counter-debug",
];

const checksOf = (node: SamNode): Check[] => [
  ...node.items.flatMap((i) => i.checks),
  ...node.children.flatMap(checksOf),
];

/** Runs `script` in a fresh, network-less container of the image with `taskDir` at /task. */
function inImage(taskDir: string, script: string, timeoutSec: number): { status: number; output: string } {
  const run = spawnSync(
    "docker",
    [
      "run",
      "--rm",
      "--network",
      "none",
      "--user",
      `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`,
      "-e",
      "HOME=/tmp",
      "-v",
      `${taskDir}:/task`,
      "-w",
      "/task",
      IMAGE,
      "sh",
      "-c",
      script,
    ],
    { encoding: "utf8", timeout: (timeoutSec + 60) * 1000 },
  );
  return { status: run.status ?? -1, output: `${run.stdout}${run.stderr}` };
}

/**
 * Runs every check in order (`bash -o pipefail` in the task folder, with its timeout). A run stage's
 * declared outputs are then copied to `outputs/`, where the compare stages read them (the runner
 * gives a compare stage a folder of its own; here the point is what the checks compute).
 */
function runChecks(taskDir: string, checks: Check[]): Map<string, number> {
  const scripts = join(taskDir, ".checks");
  mkdirSync(scripts, { recursive: true });
  const lines = checks.map((check, n) => {
    writeFileSync(join(scripts, `${n}.sh`), check.command);
    const copies = (check.outputs ?? []).map(
      (o) => `mkdir -p "$(dirname 'outputs/${o}')" && cp -f '${o}' 'outputs/${o}' 2>/dev/null;`,
    );
    return `timeout ${check.timeoutSec} bash -o pipefail .checks/${n}.sh >/dev/null 2>&1; echo "RESULT ${check.id} $?"; ${copies.join(" ")}`;
  });
  const total = checks.reduce((s, c) => s + c.timeoutSec, 0);
  const { output } = inImage(taskDir, `rm -rf outputs\n${lines.join("\n")}`, total);
  const results = new Map<string, number>();
  for (const match of output.matchAll(/^RESULT (\S+) (\d+)$/gm))
    results.set(match[1] ?? "", Number(match[2]));
  expect([...results.keys()], output).toEqual(checks.map((c) => c.id));
  return results;
}

describe.skipIf(!hasEngine("docker"))(`example checks in ${IMAGE}`, () => {
  beforeAll(() => {
    // Cached: seconds when the image is up to date (CI builds it in its own step first).
    execFileSync("bash", ["scripts/build-image.sh"], { cwd: repo, stdio: "inherit" });
  }, 1_800_000);

  it.each(EXAMPLES)(
    "%s: checks fail as shipped and pass after a known-good solution",
    (name) => {
      const parsed = parseSamSync(join(repo, "tasks", "examples", name, "task.md"));
      if (!parsed.ok) throw new Error(`${name} does not validate`);
      const checks = checksOf(parsed.sam.root);
      const taskDir = mkdtempSync(join(tmpdir(), `scifi-example-${name}-`));
      chmodSync(taskDir, 0o777);
      cpSync(join(repo, "tasks", "examples", name), taskDir, { recursive: true });

      const before = runChecks(taskDir, checks);
      // A run stage may pass on the untouched folder (it only runs the work); its item's compare fails.
      const firstItem = parsed.sam.root.items.find((i) => i.checks.length > 0)?.checks ?? [];
      expect(
        firstItem.some((c) => before.get(c.id) !== 0),
        "the main item's checks must fail before the task is done",
      ).toBe(true);

      cpSync(join(repo, "test", "fixtures", "sam", "solutions", name), taskDir, { recursive: true });
      const solved = inImage(taskDir, "sh solve.sh", 600);
      expect(solved.status, solved.output).toBe(0);
      const after = runChecks(taskDir, checks);
      expect(Object.fromEntries(after)).toEqual(Object.fromEntries(checks.map((c) => [c.id, 0])));
      rmSync(taskDir, { recursive: true, force: true });
    },
    900_000,
  );
});
