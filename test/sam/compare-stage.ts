// A one-item SAM around a compare stage, validated as `scifi validate` does (checkSam): the a38d
// lint tests and what held share it. The task has check assets checks/ref.txt and checks/grade.py
// and a run stage that declares outputs r.txt.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkSam } from "../../runner/sam/gate.ts";

/** The error messages of a SAM whose compare stage is `stage` (none: it validates). */
export function validateCompareStage(stage: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "scifi-compare-stage-"));
  mkdirSync(join(dir, "checks"));
  writeFileSync(join(dir, "checks", "ref.txt"), "42\n");
  writeFileSync(join(dir, "checks", "grade.py"), "import sys\nprint(open(sys.argv[1]).read())\n");
  const body = stage
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
  const sam = `---\nname: t\ncheck_assets: [checks/ref.txt, checks/grade.py]\n---\n# T\n\n## To-do\nWrite 42 to answer.txt.\n\n## Expectation\n- answer.txt holds 42.\n  \`\`\`check outputs=r.txt\n  echo 1 > r.txt\n  \`\`\`\n  \`\`\`compare\n${body}\n  \`\`\`\n`;
  writeFileSync(join(dir, "task.md"), sam);
  return checkSam(join(dir, "task.md"))
    .diagnostics.filter((d) => d.severity === "error")
    .map((d) => d.message);
}
