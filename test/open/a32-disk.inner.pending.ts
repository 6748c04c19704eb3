// Attack round 32 on Apptainer, INSIDE the harness as the non-root user (run it with
// `bash scripts/apptainer-harness.sh run node node_modules/vitest/vitest.mjs run --configLoader
// native --config test/attack32/vitest.inner.config.ts`). A32-5: a file unlinked while a process of
// the sandbox holds it open keeps its blocks on the host's disk where no walk of the task folder
// sees them, so 32 MiB against an 8 MiB quota passes without QuotaExceeded (the Docker twin is
// A32-1 in disk.docker.test.ts). Shell only: the harness's test image has no python3.
import { describe, expect, it } from "vitest";
import { createApptainerBackend } from "../../runner/sandbox/apptainer.ts";
import { QuotaExceeded } from "../../runner/sandbox/types.ts";
import { taskSpec } from "../sandbox/apptainer/fixtures.ts";

const MiB = 1024 ** 2;

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
      await expect(
        sb.exec(
          "exec 3<>/task/big; rm /task/big; dd if=/dev/urandom bs=1M count=32 >&3 2>/dev/null; sync; echo held $(stat -L -c %b /proc/self/fd/3) blocks",
        ),
      ).rejects.toThrow(QuotaExceeded);
    } finally {
      await sb.stop();
    }
  }, 120_000);
});
