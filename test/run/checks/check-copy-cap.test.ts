// The checks' copy of the task folder has a cap (16 GiB of allocated blocks: docs/loop.md, "Checks
// in stages"). A folder over it ends the run failed with a precise reason, never a check on a
// partial copy; a sparse file counts by its blocks (a 20 GiB hole passes a 1 MiB cap and stays
// sparse); SCIFI_CHECK_COPY_MAX_BYTES can only lower the cap.
import { mkdirSync, mkdtempSync, readdirSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CopyTooLarge, copyForChecks } from "../../../runner/run/checks/check-copy.ts";
import { CHECK_COPY_MAX_BYTES, checkCopyMaxBytes } from "../../../runner/run/task-folder/task-folder.ts";
import { outcomeOfEnding } from "../../../runner/run-ending.ts";

const MiB = 1024 ** 2;

function folder(): { src: string; dest: string } {
  const root = mkdtempSync(join(tmpdir(), "scifi-copy-cap-"));
  const src = join(root, "task");
  mkdirSync(join(src, "data"), { recursive: true });
  writeFileSync(join(src, "answer.txt"), "42\n");
  return { src, dest: join(root, "copy") };
}

describe("the checks' copy cap", () => {
  it("a folder over the cap ends the run failed (checks_copy), naming the cap and where it was reached", () => {
    const { src, dest } = folder();
    writeFileSync(join(src, "data", "big.bin"), Buffer.alloc(2 * MiB, 1));
    let caught: unknown;
    try {
      copyForChecks(src, dest, { maxBytes: MiB });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CopyTooLarge);
    expect(outcomeOfEnding(caught as Error)).toMatchObject({ status: "failed", limit: "checks_copy" });
    expect((caught as Error).message).toBe(
      "the task folder takes more than 1 MiB on disk (allocated blocks, holes not counted; reached at data/big.bin), so the checks cannot have a copy of it of their own and none runs. Keep large data outside the task folder, in a declared mount (SAM `mounts:`, read-only in the checks)",
    );
  });

  it("a sparse file counts by its blocks: 20 GiB of holes pass a 1 MiB cap and stay sparse", () => {
    const { src, dest } = folder();
    writeFileSync(join(src, "data", "holes.bin"), "");
    truncateSync(join(src, "data", "holes.bin"), 20 * 1024 ** 3);
    expect(copyForChecks(src, dest, { maxBytes: MiB })).toEqual([]);
    const copied = statSync(join(dest, "data", "holes.bin"));
    expect(copied.size).toBe(20 * 1024 ** 3);
    expect(copied.blocks * 512).toBeLessThan(MiB);
    expect(readdirSync(dest).sort()).toEqual(["answer.txt", "data"]);
  });

  it("SCIFI_CHECK_COPY_MAX_BYTES lowers the cap, and nothing else is accepted", () => {
    expect(CHECK_COPY_MAX_BYTES).toBe(16 * 1024 ** 3);
    expect(checkCopyMaxBytes({})).toBe(CHECK_COPY_MAX_BYTES);
    expect(checkCopyMaxBytes({ SCIFI_CHECK_COPY_MAX_BYTES: "4096" })).toBe(4096);
    for (const bad of ["0", "-1", "1e6", "abc", "4096 ", String(CHECK_COPY_MAX_BYTES + 1)])
      expect(() => checkCopyMaxBytes({ SCIFI_CHECK_COPY_MAX_BYTES: bad })).toThrow(
        /it can only lower the checks' copy cap/,
      );
  });
});
