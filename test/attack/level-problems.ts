// The suite's problems for one task folder with two description levels (`task.nl.md` = nl,
// `task.st.md` = st), loaded by the real suite loader (parsing only); [] when it loads.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadSuite, SuiteError } from "../../runner/eval/suite.ts";

export async function levelProblems(nl: string, st: string, task = "v"): Promise<string[]> {
  const root = mkdtempSync(join(tmpdir(), "eval-levels-"));
  const dir = join(root, "t", task);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "task.nl.md"), nl);
  writeFileSync(join(dir, "task.st.md"), st);
  writeFileSync(join(root, "s.yaml"), `tasks: [t/${task}]\nmodels: [scripted:x.yaml]\n`);
  writeFileSync(join(root, "x.yaml"), "prescan: []\n");
  try {
    await loadSuite(join(root, "s.yaml"));
  } catch (error) {
    if (error instanceof SuiteError) return error.problems;
    throw error;
  }
  return [];
}
