// The task the hidden-content tests share: one compare stage against the hidden checks/secret.json.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const SECRET = '{"sum": 4242, "note": "the hidden reference"}\n';

/** The SAM text, named `name`. */
export function hiddenTaskSam(name: string): string {
  return [
    "---",
    `name: ${name}`,
    "check_assets: [checks/compare.py]",
    "hidden_assets: [checks/secret.json]",
    "---",
    "# Sum",
    "## To-do",
    "Write the sum to result.txt.",
    "## Expectation",
    "- The sum is right.",
    "  ```check outputs=result.txt",
    "  true",
    "  ```",
    "  ```compare",
    "  python3 checks/compare.py outputs/result.txt checks/secret.json",
    "  ```",
    "",
  ].join("\n");
}

/** Writes the task into `dir` (which exists): the hidden secret, the compare script, task.md. */
export function writeHiddenTask(dir: string, name: string): void {
  mkdirSync(join(dir, "checks"), { recursive: true });
  writeFileSync(join(dir, "checks", "secret.json"), SECRET);
  writeFileSync(join(dir, "checks", "compare.py"), "import sys\n");
  writeFileSync(join(dir, "task.md"), hiddenTaskSam(name));
}
