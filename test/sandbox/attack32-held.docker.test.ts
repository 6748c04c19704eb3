// Found by an attacker (round 32) of the host disk, kept as tests (the Apptainer twin of A32-1 is
// A32-5 in apptainer/a32-held.inner.ts):
// - A32-1 a file unlinked while a process of the sandbox holds it open keeps its blocks on the host
//   disk where no walk of the task folder sees them: the quota now counts the deleted files the
//   sandbox's processes hold (runner/sandbox/held-files.ts).
// - A32-7 one fallocate call took the host's disk past the quota by whatever it asked: allocating
//   fallocate is refused in the sandbox (EOPNOTSUPP, so posix_fallocate falls back to writing, which
//   the quota's poll sees).
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../runner/policy/spec.ts";
import { createDockerBackend } from "../../runner/sandbox/docker.ts";
import { QuotaExceeded, type Sandbox } from "../../runner/sandbox/types.ts";
import { hasEngine } from "../helpers/engines.ts";
import { taskFolderSpec } from "../helpers/spec.ts";
import { ensureImage, IMAGE } from "../run/harness.ts";

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

// Opens /task/big, unlinks it, puts 64 MiB in it (posix_fallocate: written by glibc when the
// sandbox refuses fallocate itself), says so on stdout, then holds it for SECONDS.
const holder = (seconds: number) =>
  `python3 -c "import os,time; f=os.open('/task/big', os.O_CREAT|os.O_RDWR); os.unlink('/task/big'); os.posix_fallocate(f,0,64<<20); print('held', os.fstat(f).st_blocks*512, flush=True); time.sleep(${seconds})"`;

describe.skipIf(!hasEngine("docker"))("A32: the host disk (docker)", () => {
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
      expect(sb.quotaExceeded?.()).toBeUndefined();
      // A holder in the command itself: the poll sees the held blocks and kills it.
      await expect(sb.exec(holder(60), { timeoutMs: 30_000 })).rejects.toThrow(/deleted file.*holds open/);
      // Killed with it: its blocks are free again.
      await sb.exec("true");
      expect(sb.quotaExceeded?.()).toBeUndefined();
      // A holder left in the background (it starts a second later): the command that starts it
      // returns; the measurement after the next command sees the blocks it holds.
      const bg = `setsid sh -c 'sleep 1; ${holder(600).replaceAll("'", "'\\''")}' >/tmp/held 2>&1 </dev/null &`;
      expect((await sb.exec(bg)).exitCode).toBe(0);
      await new Promise((r) => setTimeout(r, 4000));
      await expect(sb.exec("cat /tmp/held")).rejects.toThrow(QuotaExceeded);
      expect(sb.quotaExceeded?.()?.message).toMatch(/64\.0 MiB of it in 1 deleted file/);
      // Ending the holder frees the blocks: the folder is under its limit again.
      await sb.exec("pkill -f posix_fallocate; sleep 1");
      await sb.exec("true");
      expect(sb.quotaExceeded?.()).toBeUndefined();
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
      const r = await sb.exec("fallocate -l 1G big; echo EXIT=$?");
      allocated = lstatSync(join(task, "big"), { throwIfNoEntry: false })?.blocks ?? 0;
      expect(r.stderr).toMatch(/not supported/i);
      expect(r.stdout).toContain("EXIT=1");
      // Freeing space stays possible: a punched hole is not an allocation.
      const punch = await sb.exec(
        "head -c 1048576 /dev/zero > small && fallocate -p -o 0 -l 524288 small && echo PUNCHED",
      );
      expect(punch.stdout).toContain("PUNCHED");
      // The residual (docs/sandbox.md): a plain writer overshoots by what it writes in a poll period.
      await expect(sb.exec("dd if=/dev/zero of=fast bs=1M count=4096 2>/dev/null")).rejects.toThrow(
        /the command was killed/,
      );
      const fast = lstatSync(join(task, "fast"), { throwIfNoEntry: false })?.blocks ?? 0;
      console.log(
        `A32-7: a dd writer left ${(fast * 512) / MiB} MiB before the poll killed it (quota 8 MiB)`,
      );
    } finally {
      await sb.exec("rm -f fast").catch(() => undefined);
      await sb.exec("rm -f big").catch(() => undefined);
      await sb.stop();
    }
    console.log(`A32-7: left allocated after the refused call: ${(allocated * 512) / MiB} MiB (quota 8 MiB)`);
    expect(allocated * 512, "the overshoot of one call").toBeLessThan(64 * MiB);
  }, 120_000);
});
