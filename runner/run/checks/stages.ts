// The two kinds of check stage (docs/loop.md, Checks in stages). A run stage runs the agent's work
// in the task folder (never with hidden assets) and names its outputs; the runner copies them out,
// as data. A compare stage runs in a folder the runner builds: its pristine check assets (hidden
// ones too) at their task-folder paths and, under `outputs/`, the run stages' outputs, read-only
// and without exec bits. No file the agent wrote is anywhere else in it, so nothing of the agent's
// sits on an include, module, library or config search path of the comparison.
import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { HostPathRefused, readTaskFile } from "../../policy/host-paths.ts";
import type { PristineSet } from "../../run-folder/state.ts";
import { copyAsset, freshFolder } from "./check-views.ts";
import { outputFormatProblem } from "./output-formats.ts";

/** One declared output is copied out up to this size; past it the run stage fails, naming it. */
export const OUTPUT_MAX_BYTES = 64 * 1024 ** 2;
/** All outputs of one iteration together. */
export const OUTPUTS_MAX_BYTES = 256 * 1024 ** 2;

/** The outputs the run stages of one iteration copied out (runs/<id>/outputs/it<N>/). */
export class StageOutputs {
  readonly dir: string;
  #bytes = 0;
  readonly #hiddenNames: string[];
  /** An output refused for what it is (a link, a special file, a format naming a file): an integrity event. */
  readonly #onRefused: (rel: string, why: string) => void;
  /**
   * `hidden`: the hidden assets' task-folder paths; no output may hold their names (output-formats.ts).
   * `onRefused`: told of each refused output.
   */
  constructor(
    dir: string,
    hidden: readonly string[] = [],
    onRefused: (rel: string, why: string) => void = () => {},
  ) {
    this.dir = dir;
    this.#onRefused = onRefused;
    // A short base name ("ref") is part of too many honest words to be refused on its own.
    this.#hiddenNames = [
      ...new Set(hidden.flatMap((rel) => [rel, ...(basename(rel).length >= 6 ? [basename(rel)] : [])])),
    ];
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /**
   * Copies each declared output out of `fromDir` (no link followed, regular files only, capped);
   * an output whose format names another file is refused (output-formats.ts) and not copied.
   * Returns what went wrong, one line per output (empty: all copied).
   */
  collect(fromDir: string, outputs: readonly string[]): string[] {
    const problems: string[] = [];
    for (const rel of outputs) {
      let data: Buffer;
      try {
        data = readTaskFile(fromDir, rel, rel, OUTPUT_MAX_BYTES);
      } catch (error) {
        const why =
          error instanceof HostPathRefused || error instanceof Error ? error.message : String(error);
        if (error instanceof HostPathRefused && !error.reason.startsWith("larger than"))
          this.#onRefused(rel, error.reason);
        problems.push(/ENOENT|no such file/i.test(why) ? `declared output ${rel} was not produced` : why);
        continue;
      }
      if (this.#bytes + data.length > OUTPUTS_MAX_BYTES) {
        problems.push(
          `declared output ${rel}: the outputs of this iteration pass ${OUTPUTS_MAX_BYTES} bytes`,
        );
        continue;
      }
      const named = outputFormatProblem(rel, data, { hiddenNames: this.#hiddenNames });
      if (named) {
        this.#onRefused(rel, named);
        problems.push(named);
        continue;
      }
      this.#bytes += data.length;
      const copy = join(this.dir, rel);
      mkdirSync(dirname(copy), { recursive: true, mode: 0o700 });
      rmSync(copy, { force: true, recursive: true });
      writeFileSync(copy, data, { mode: 0o444 });
    }
    return problems;
  }
}

/**
 * The compare stage's working folder (its /task): the check assets from the runner's copies, and
 * the outputs under `outputs/` (bound read-only by the sandbox, sandboxes.ts). An asset keeps its
 * exec bit (a check script run directly), an output never has one; a compiler may write its own
 * files beside the assets, in this throw-away folder.
 */
export function buildCompareFolder(
  dest: string,
  pristineDir: string,
  pristine: PristineSet,
  outputsDir: string,
): void {
  freshFolder(dest); // an earlier compare stage's folder: its outputs/ is 0555
  for (const file of pristine.files) if (file.kind === "asset") copyAsset(dest, pristineDir, file);
  copyTree(outputsDir, join(dest, "outputs"));
}

/** The runner's own copies (no agent path here): files 0444, folders 0555 once filled. */
function copyTree(from: string, to: string): void {
  mkdirSync(to, { recursive: true, mode: 0o755 });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) copyTree(source, target);
    else if (entry.isFile()) {
      copyFileSync(source, target);
      chmodSync(target, 0o444);
    }
  }
  chmodSync(to, 0o555);
}
