// A vitest reporter for `.ci/run`: appends one JSON line per finished test file to the file named by
// SCIFI_CI_TIMES, as each file ends, so a run that fails or is stopped half-way still leaves the
// times of what finished. The time is the whole span the file held a worker (environment, imports,
// hooks and tests), not only its tests: vitest's JSON reporter leaves out a slow beforeAll.
// Used as `vitest run --reporter=default --reporter=./scripts/ci-file-times.ts`.
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import type { Reporter, TestModule } from "vitest/node";

/** One finished test file, as written to SCIFI_CI_TIMES (one JSON object per line). */
export interface FileTime {
  /** Path relative to the project root. */
  file: string;
  /** Wall time the file held its worker, in milliseconds. */
  ms: number;
  state: string;
  /** Set when the file ran inside another one (the Apptainer harness's inner suites): that file. */
  inside?: string;
}

/**
 * Appends the lines of `from` (times written inside a nested vitest run) to `to`, each marked as
 * run inside `host`, so the table shows them apart. A missing `from` (the run died early) adds nothing.
 */
export function appendInner(from: string, to: string, host: string): void {
  if (!existsSync(from)) return;
  const lines = readFileSync(from, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.stringify({ ...(JSON.parse(l) as FileTime), inside: host })];
      } catch {
        return [];
      }
    });
  if (lines.length > 0) appendFileSync(to, `${lines.join("\n")}\n`);
}

/** Milliseconds a module held its worker: environment, setup files, imports, hooks and tests. */
export function moduleMs(module: TestModule): number {
  const d = module.diagnostic();
  return Math.round(
    d.environmentSetupDuration + d.prepareDuration + d.setupDuration + d.collectDuration + d.duration,
  );
}

export default class FileTimesReporter implements Reporter {
  readonly #out: string;

  constructor() {
    const out = process.env.SCIFI_CI_TIMES;
    if (!out) {
      throw new Error(
        "ci-file-times: set SCIFI_CI_TIMES to the file the per-file times are appended to (.ci/run does)",
      );
    }
    this.#out = out;
  }

  onTestModuleEnd(module: TestModule): void {
    const line: FileTime = { file: module.relativeModuleId, ms: moduleMs(module), state: module.state() };
    appendFileSync(this.#out, `${JSON.stringify(line)}\n`);
  }
}
