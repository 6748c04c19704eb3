// Runs the real Apptainer backend the way a cluster user would: inside the harness container, as a
// non-root user, with the same conformance and escape suites as Docker (test/sandbox/apptainer/*.inner.ts).
// The host only needs Docker; the harness script builds (or reuses) the harness image and test SIF.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, describe, expect, it } from "vitest";
import { appendInner } from "../../scripts/ci-file-times.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";

const repo = join(import.meta.dirname, "..", "..");
const script = join(repo, "scripts", "apptainer-harness.sh");

interface JsonReport {
  numTotalTests: number;
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: { name: string; assertionResults: { fullName: string; status: string }[] }[];
}

describe.skipIf(!hasEngine("docker"))("apptainer backend inside the harness (non-root)", () => {
  let out = "";
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it(
    "passes the inner suites with nothing skipped",
    async () => {
      out = await mkdtemp("/tmp/scifi-apptainer-report-");
      // adversarial.inner.ts runs whole tasks (a compiler, Python): it needs the scientific image's SIF.
      ensureImage();
      const sif = await execa("bash", [script, "sif", "scifi-sci:local"], { reject: false, all: true });
      expect(sif.exitCode, `sif scifi-sci:local:\n${String(sif.all).slice(-5_000)}`).toBe(0);
      const report = join(out, "report.json");
      const times = join(out, "inner-times.jsonl");
      const run = await execa(
        "bash",
        [
          script,
          "test",
          "--reporter=default",
          "--reporter=json",
          `--outputFile.json=${report}`,
          "--reporter=./scripts/ci-file-times.ts",
        ],
        {
          reject: false,
          all: true,
          env: { SCIFI_HARNESS_OUT: out, SCIFI_CI_TIMES: times },
          timeout: 25 * 60_000,
        },
      );
      // In CI, the inner files' times join the timing table (.ci/run), marked as run inside this file.
      if (process.env.SCIFI_CI_TIMES)
        appendInner(times, process.env.SCIFI_CI_TIMES, "test/sandbox/apptainer.test.ts");
      const shown = `harness output (exit ${run.exitCode}):\n${String(run.all).slice(-20_000)}`;
      expect(run.exitCode, shown).toBe(0);
      const json = JSON.parse(await readFile(report, "utf8")) as JsonReport;
      expect(json.numFailedTests, shown).toBe(0);
      expect(json.numPendingTests + json.numTodoTests, `skipped tests inside the harness\n${shown}`).toBe(0);
      const files = json.testResults.map((r) => r.name);
      for (const inner of [
        "conformance.inner.ts",
        "backend.inner.ts",
        "adversarial.inner.ts",
        "examples.inner.ts",
        "grant.inner.ts",
        "network.inner.ts",
        "pdf-pages.inner.ts",
        "process-exit.inner.ts",
        "a32-held.inner.ts",
        "critique.inner.ts",
        "task-folder-lock.inner.ts",
        "integrity.inner.ts",
        "checks-mount-readonly.inner.ts",
        "finish-after-ptrace.inner.ts",
        "a38b-job-bind.inner.ts",
        "check-view.inner.ts",
        "a37c-held.inner.ts",
        "a37c-fuse-whiteout-name.inner.ts",
        "a37c-whiteout-asset.inner.ts",
        "a37c-whiteout-e2e.inner.ts",
        "a37c-fuse-sparse-copyup.inner.ts",
        "a37c-forced-view-silent.inner.ts",
        "a37d-held.inner.ts",
        "a41d-clock-follow.inner.ts",
      ]) {
        expect(
          files.some((f) => f.endsWith(inner)),
          `${inner} did not run\n${shown}`,
        ).toBe(true);
      }
      expect(json.numPassedTests).toBe(json.numTotalTests);
      expect(json.numTotalTests).toBeGreaterThan(40);
    },
    30 * 60_000,
  );
});
