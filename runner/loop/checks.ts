// The runner's own checks: Expectation `check` blocks run in the sandbox, with the check assets and
// SAM files verified against their hashes first (a changed file is tampering and fails the run).
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import type { CheckOutcome } from "../agents/review.ts";
import type { SamNode } from "../sam/types.ts";
import type { Sandbox } from "../sandbox/types.ts";

export class Tampering extends Error {
  override name = "Tampering";
  readonly file: string;
  readonly expected: string;
  readonly actual: string;
  constructor(file: string, expected: string, actual: string, what: string) {
    super(
      `${what} ${file} changed during the run (sha256 ${expected.slice(0, 12)}... -> ${actual.slice(0, 12)}...): tampering`,
    );
    this.file = file;
    this.expected = expected;
    this.actual = actual;
  }
}

export function hashFile(file: string): string {
  return existsSync(file) ? createHash("sha256").update(readFileSync(file)).digest("hex") : "missing";
}

/** Throws Tampering for the first file whose hash differs from the recorded one. */
export function verifyHashes(files: Record<string, string>, what: string): void {
  for (const [file, expected] of Object.entries(files)) {
    const actual = hashFile(file);
    if (actual !== expected) throw new Tampering(file, expected, actual, what);
  }
}

export interface CheckRunOptions {
  sandbox: Sandbox;
  node: SamNode;
  assets: Record<string, string>;
  onCheck?: (outcome: CheckOutcome) => void;
}

/** Runs every check of the node's items in order; assets are verified before each one. */
export async function runChecks(options: CheckRunOptions): Promise<CheckOutcome[]> {
  const outcomes: CheckOutcome[] = [];
  for (const item of options.node.items) {
    for (const check of item.checks) {
      verifyHashes(options.assets, "check asset");
      const result = await options.sandbox.exec(["sh", "-c", check.command], {
        timeoutMs: check.timeoutSec * 1000,
        maxOutputBytes: 64 * 1024,
      });
      const output = `${result.stdout}${result.stderr ? `\n${result.stderr}` : ""}`;
      const outcome: CheckOutcome = {
        id: check.id,
        itemId: item.id,
        command: check.command,
        passed: !result.timedOut && result.exitCode === 0,
        exitCode: result.exitCode,
        timedOut: result.timedOut,
        output: output.split("\n").slice(-40).join("\n").slice(-4000),
      };
      outcomes.push(outcome);
      options.onCheck?.(outcome);
    }
  }
  return outcomes;
}
