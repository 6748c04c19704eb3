// The attack tests' smallest task (one iteration, one check that out.txt exists), a suite of one
// such task, and a child's exit.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function outTxtTask(name: string): string {
  return `---
name: ${name}
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
}

/**
 * A suite of one task (`tasks/<name>/task.md` = `task`) and one scripted model (`model`, a script),
 * one trial at a time, in a fresh folder with an empty home. `model` is written to `<root>/m.yaml`.
 */
export function oneTaskSuite(
  name: string,
  task: string,
  model: string,
): { root: string; home: string; suite: string; modelFile: string } {
  const root = mkdtempSync(join(tmpdir(), `${name}-`));
  mkdirSync(join(root, "tasks", name), { recursive: true });
  writeFileSync(join(root, "tasks", name, "task.md"), task);
  const modelFile = join(root, "m.yaml");
  writeFileSync(modelFile, model);
  const suite = join(root, "suite.yaml");
  writeFileSync(
    suite,
    `tasks: [tasks/${name}]\nmodels: [{ name: m, spec: 'scripted:m.yaml' }]\nrepeats: 1\nconcurrency: 1\n`,
  );
  const home = join(root, "home");
  mkdirSync(home);
  return { root, home, suite, modelFile };
}

/** The child's exit code (null when a signal ended it), once it has exited. */
export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.on("exit", (code) => resolve(code));
  });
}
