// An import's output goes through the one SAM gate (runner/sam/gate.ts, what `scifi validate`
// reports, on-disk checks included) before it exists: it is written into a staging folder beside the
// output, checked there with its assets in place, and moved into place only when the gate passes.
// A refused import leaves no output folder (nor a folder made above it), only the error with the
// diagnostics, named as the output's paths.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, renameSync, rmdirSync, rmSync } from "node:fs";
import { basename, dirname, join, sep } from "node:path";
import { scifiHome } from "../paths.ts";
import { formatDiagnostic } from "../sam/diagnostics.ts";
import { checkSam } from "../sam/gate.ts";
import { gateOptions } from "../skills/sam-gate.ts";
import { HarborImportError } from "./harbor-config.ts";

/** The imported SAM is one `scifi validate` refuses: every diagnostic, against the output's paths. */
export class ImportRefused extends HarborImportError {
  override name = "ImportRefused";
}

/**
 * Runs `build` on a fresh staging folder beside `outDir` (an absent or empty folder), gates its
 * task.md with the skills of `home`, then moves it to `outDir`. Any failure removes what was made.
 */
export function stagedImport<T>(outDir: string, home: string | undefined, build: (dir: string) => T): T {
  const made = firstMissing(dirname(outDir));
  mkdirSync(dirname(outDir), { recursive: true });
  const stage = join(dirname(outDir), `.${basename(outDir)}.importing-${randomBytes(6).toString("hex")}`);
  mkdirSync(stage);
  let moved = false;
  try {
    const result = build(stage);
    const checked = checkSam(join(stage, "task.md"), gateOptions(home ?? scifiHome()));
    if (!checked.ok) {
      const shown = (file: string) =>
        file.startsWith(stage + sep) ? join(outDir, file.slice(stage.length + 1)) : file;
      const lines = checked.diagnostics.map((d) => formatDiagnostic({ ...d, file: shown(d.file) }));
      throw new ImportRefused(
        `the imported SAM is not valid (scifi validate would refuse it), so nothing was written:\n${lines.join("\n")}`,
      );
    }
    // The output was checked absent or empty before anything was written.
    if (existsSync(outDir)) rmdirSync(outDir);
    renameSync(stage, outDir);
    moved = true;
    return result;
  } finally {
    if (!moved) {
      rmSync(stage, { recursive: true, force: true });
      if (made) rmSync(made, { recursive: true, force: true });
    }
  }
}

/** The highest folder of `dir` that does not exist yet (mkdir -p would make it), if any. */
function firstMissing(dir: string): string | undefined {
  let missing: string | undefined;
  for (let at = dir; !existsSync(at); at = dirname(at)) {
    missing = at;
    if (dirname(at) === at) break;
  }
  return missing;
}
