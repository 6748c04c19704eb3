// Integrity events on Apptainer, INSIDE the harness as the non-root user: the same table as the
// Docker suite (test/run/session/integrity-table.ts: one task, one scripted agent per kind of attempt, an
// honest control), run through the whole loop with backend "apptainer" and the run's proxy. The task
// needs Python: the scientific image's SIF (scifi-sci:local), which test/sandbox/apptainer.test.ts
// makes. The SLURM rows use the harness's one-node cluster (`apptainer-harness.sh test` starts it).
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApptainerBackend, sifFileName } from "../../../runner/sandbox/apptainer.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { type Row, runRow, TABLE, verifyRow } from "../../run/session/integrity-table.ts";

const IMAGE = "scifi-sci:local";
let root = "";

describe("integrity events, one per kind of attempt (apptainer, inside the harness)", () => {
  beforeAll(() => {
    expect(process.getuid?.()).not.toBe(0);
    const sif = join(process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif", sifFileName(IMAGE));
    expect(
      existsSync(sif),
      `no SIF for ${IMAGE} at ${sif}: bash scripts/apptainer-harness.sh sif ${IMAGE}`,
    ).toBe(true);
    root = mkdtempSync(join(tmpdir(), "scifi-integrity-"));
  });
  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const run = async (row: Row) => {
    const { home, result } = await runRow(root, row, {
      sandbox: createApptainerBackend({ proxy: { hosts: {}, systemResolver: false } }),
    });
    verifyRow(row, home, result);
  };
  it.each(TABLE.filter((r) => !r.slurm))("$agent", { timeout: 240_000 }, run);
  // Skipped, and shown so, in a harness started without SCIFI_HARNESS_SLURM=1 (test/sandbox/apptainer.test.ts
  // fails on any skip).
  it.skipIf(!hasEngine("slurm")).each(TABLE.filter((r) => r.slurm))(
    "$agent (slurm)",
    { timeout: 240_000 },
    run,
  );
});
