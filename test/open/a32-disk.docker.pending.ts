import { chmodSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../runner/policy/spec.ts";
import { createDockerBackend } from "../../runner/sandbox/docker.ts";
import { QuotaExceeded, type Sandbox } from "../../runner/sandbox/types.ts";
import { hasEngine } from "../helpers/engines.ts";
import { taskFolderSpec } from "../helpers/spec.ts";
import { ensureImage, IMAGE } from "../loop/harness.ts";

const _isRoot = process.getuid?.() === 0;
const MiB = 1024 ** 2;

function folder(): string {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "scifi-a32-")));
  chmodSync(base, 0o755);
  const task = join(base, "task");
  mkdirSync(task);
  writeFileSync(join(task, "task.md"), "x\n");
  return task;
}

async function start(task: string, runId: string, overrides: Partial<SandboxSpec> = {}): Promise<Sandbox> {
  const spec = taskFolderSpec(
    { runId, image: IMAGE, taskDir: task },
    { labels: { "scifi.test": "attack32" }, ...overrides },
  );
  return createDockerBackend().start(spec);
}

describe.skipIf(!hasEngine("docker"))("A32: the host disk and the lending (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("A32-1 a file unlinked while open in /task counts against the quota: 64 MiB against 8 MiB is refused", async () => {
    const task = folder();
    const sb = await start(task, `a32-1-${process.pid}-${Date.now()}`, {
      taskFolderQuota: { maxAddBytes: 8 * MiB },
    });
    try {
      // The control: the same allocation in a file that stays is refused.
      await expect(
        sb.exec(
          `python3 -c "import os; f=os.open('/task/kept', os.O_CREAT|os.O_RDWR); os.posix_fallocate(f,0,64<<20)"`,
        ),
      ).rejects.toThrow(QuotaExceeded);
      await sb.exec("rm -f /task/kept");
      // The attack: unlinked first, then 64 MiB allocated; the blocks are on the host's disk until
      // the process ends (a background holder keeps them for the rest of the run).
      await expect(
        sb.exec(
          `python3 -c "import os; f=os.open('/task/big', os.O_CREAT|os.O_RDWR); os.unlink('/task/big'); os.posix_fallocate(f,0,64<<20); print('held', os.fstat(f).st_blocks*512)"`,
        ),
      ).rejects.toThrow(QuotaExceeded);
    } finally {
      await sb.stop();
    }
  }, 120_000);

  it("A32-7 one fallocate call does not take the host's disk far past the quota", async () => {
    const task = folder();
    const sb = await start(task, `a32-7-${process.pid}-${Date.now()}`, {
      taskFolderQuota: { maxAddBytes: 8 * MiB },
    });
    let allocated = 0;
    try {
      await expect(sb.exec("fallocate -l 1G big; echo ALLOCATED")).rejects.toThrow(QuotaExceeded);
      allocated = lstatSync(join(task, "big"), { throwIfNoEntry: false })?.blocks ?? 0;
    } finally {
      await sb.exec("rm -f big").catch(() => undefined);
      await sb.stop();
    }
    console.log(`A32-7: left allocated after the refused call: ${(allocated * 512) / MiB} MiB (quota 8 MiB)`);
    expect(allocated * 512, "the overshoot of one call").toBeLessThan(64 * MiB);
  }, 120_000);
});
