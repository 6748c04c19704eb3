// Attack round 32 on Apptainer, INSIDE the harness as the non-root user (test/sandbox/apptainer.test.ts
// runs it). A32-5: a file unlinked while a process of the sandbox holds it open keeps its blocks on
// the host's disk where no walk of the task folder sees them; the quota now counts the deleted files
// the instance's processes hold (runner/sandbox/held-files.ts). A32-7's twin: an allocating
// fallocate is refused by the instance's seccomp profile. The Docker twin is
// test/sandbox/attack32-held.docker.test.ts. Shell only: the harness's test image has no python3.
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createApptainerBackend } from "../../../runner/sandbox/apptainer.ts";
import { QuotaExceeded } from "../../../runner/sandbox/types.ts";
import { taskSpec } from "./fixtures.ts";

const MiB = 1024 ** 2;

// Opens /task/big on fd 3, unlinks it, writes 32 MiB into it, then holds it for SECONDS.
const holder = (seconds: number) =>
  `exec 3<>/task/big; rm /task/big; dd if=/dev/urandom bs=1M count=32 >&3 2>/dev/null; echo held; sleep ${seconds}`;

describe("A32 on Apptainer (inside the harness, non-root)", () => {
  it("A32-5 a file unlinked while open in /task counts against the quota: 32 MiB against 8 MiB is refused", async () => {
    expect(process.getuid?.()).not.toBe(0);
    const sb = await createApptainerBackend().start(
      await taskSpec({ taskFolderQuota: { maxAddBytes: 8 * MiB } }),
    );
    try {
      // The control: the same bytes in a file that stays are refused.
      await expect(sb.exec("dd if=/dev/urandom of=/task/kept bs=1M count=32 2>&1; sync")).rejects.toThrow(
        QuotaExceeded,
      );
      await sb.exec("rm -f /task/kept");
      expect(sb.quotaExceeded?.()).toBeUndefined();
      // A holder in the command itself: the poll sees the held blocks and kills it.
      await expect(sb.exec(holder(60), { timeoutMs: 30_000 })).rejects.toThrow(/deleted file.*holds open/);
      await sb.exec("true");
      expect(sb.quotaExceeded?.()).toBeUndefined();
      // A holder left in the background (it starts a second later): the command that starts it
      // returns; the measurement after the next command sees the blocks it holds.
      expect(
        (await sb.exec(`setsid sh -c 'sleep 1; ${holder(600)}' >/tmp/held 2>&1 </dev/null &`)).exitCode,
      ).toBe(0);
      // The holder starts a second later, and later still on a loaded machine: the next commands
      // are refused once it holds its blocks (up to 60 s for it to get there).
      let refused: unknown;
      for (let i = 0; i < 60 && refused === undefined; i++) {
        await new Promise((r) => setTimeout(r, 1000));
        refused = await sb.exec("cat /tmp/held").then(
          () => undefined,
          (error: unknown) => error,
        );
      }
      expect(refused).toBeInstanceOf(QuotaExceeded);
      // Measured while the holder may still be writing: the deleted file counts, whatever its size then.
      // The refusal names the deleted file; the sandbox keeps it as its state unless the measurement
      // after a killed command could not be taken (guard.ts), so the thrown error is the record.
      expect(sb.quotaExceeded?.()?.message ?? (refused as Error).message).toMatch(
        /[\d.]+ MiB of it in 1 deleted file/,
      );
    } finally {
      await sb.stop();
    }
  }, 120_000);

  it("A32-7 an allocating fallocate is refused; punching a hole is not", async () => {
    const spec = await taskSpec({ taskFolderQuota: { maxAddBytes: 8 * MiB } });
    const sb = await createApptainerBackend().start(spec);
    try {
      const r = await sb.exec("fallocate -l 1G big; echo EXIT=$?");
      expect(r.stderr).toMatch(/not permitted/i);
      expect(r.stdout).toContain("EXIT=1");
      expect(
        (lstatSync(join(spec.taskDir, "big"), { throwIfNoEntry: false })?.blocks ?? 0) * 512,
      ).toBeLessThan(MiB);
      const punch = await sb.exec(
        "head -c 1048576 /dev/zero > small && fallocate -p -o 0 -l 524288 small && echo PUNCHED",
      );
      expect(punch.stdout).toContain("PUNCHED");
    } finally {
      await sb.stop();
    }
  }, 120_000);
});
