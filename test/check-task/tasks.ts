// Small SAMs for the check-task tests: one sound task (a run stage and a compare stage against a
// hidden reference) and one for each way checks can fail to discriminate.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const FRONT = "---\nname: NAME\nwalltime: 120s\nEXTRA---\n";

function sam(name: string, expectation: string, extra = ""): string {
  return `${FRONT.replace("NAME", name).replace("EXTRA", extra)}# Sum the numbers

## To-do
Write \`answer.txt\` holding the sum of the numbers in \`data.txt\`.

## Expectation
${expectation}`;
}

/** Sound: answer.txt is copied out by a run stage and compared with a hidden reference. */
const SOUND = sam(
  "sound",
  `- \`answer.txt\` holds the sum.
  \`\`\`check timeout=30s outputs=answer.txt
  test -s answer.txt
  \`\`\`
  \`\`\`compare timeout=30s
  test "$(cat outputs/answer.txt)" = "$(cat checks/want.txt)"
  \`\`\`
`,
  "check_assets: [checks/want.txt]\nhidden_assets: [checks/want.txt]\n",
);

/** Passes untouched: the check only asks that the input exists. */
const NOTHING_PASSES = sam(
  "nothing-passes",
  `- \`answer.txt\` holds the sum.
  \`\`\`check timeout=30s
  test -s data.txt
  \`\`\`
`,
);

/** No check at all: the review alone would judge, so a bare claim passes. */
const CLAIM_PASSES = sam("claim-passes", "- `answer.txt` holds the sum of the numbers.\n");

/** The reference is wrong (7, the sum is 6): no solution can pass. */
const SOLUTION_FAILS = sam(
  "solution-fails",
  `- \`answer.txt\` holds the sum.
  \`\`\`check timeout=30s
  test "$(cat answer.txt)" = 7
  \`\`\`
`,
);

export const TASKS = {
  sound: SOUND,
  "nothing-passes": NOTHING_PASSES,
  "claim-passes": CLAIM_PASSES,
  "solution-fails": SOLUTION_FAILS,
} as const;

/** A root with a task folder per name under `root/<name>/`, and `root/solution/answer.txt` = 6. */
export function taskRoot(
  names: readonly (keyof typeof TASKS)[] = Object.keys(TASKS) as (keyof typeof TASKS)[],
): {
  root: string;
  home: string;
  solution: string;
} {
  const root = mkdtempSync(join(tmpdir(), "scifi-check-task-"));
  for (const name of names) {
    const dir = join(root, name);
    mkdirSync(join(dir, "checks"), { recursive: true });
    writeFileSync(join(dir, "task.md"), TASKS[name]);
    writeFileSync(join(dir, "data.txt"), "1\n2\n3\n");
    writeFileSync(join(dir, "checks", "want.txt"), "6\n");
  }
  const solution = join(root, "solution");
  mkdirSync(solution);
  writeFileSync(join(solution, "answer.txt"), "6\n");
  const home = join(root, "home");
  mkdirSync(home);
  return { root, home, solution };
}

/**
 * A suite folder of three tasks (sound, nothing-passes, solution-fails), each with its solution
 * beside it (`<task>.solution/`, where no agent sees it), and an empty home.
 */
export function suiteRoot(): { root: string; suite: string; home: string } {
  const root = mkdtempSync(join(tmpdir(), "scifi-check-task-eval-"));
  const suite = join(root, "suite");
  for (const name of ["sound", "nothing-passes", "solution-fails"] as const) {
    const dir = join(suite, name);
    mkdirSync(join(dir, "checks"), { recursive: true });
    writeFileSync(join(dir, "task.md"), TASKS[name]);
    writeFileSync(join(dir, "data.txt"), "1\n2\n3\n");
    writeFileSync(join(dir, "checks", "want.txt"), "6\n");
    mkdirSync(`${dir}.solution`);
    writeFileSync(join(`${dir}.solution`, "answer.txt"), "6\n");
  }
  const home = join(root, "home");
  mkdirSync(home);
  return { root, suite, home };
}
