// Fixed (runner/run/checks/check-view.ts: a task folder holding a `.wh.` name or a large sparse file gets the copy, not
// fuse-overlayfs, and the reason is recorded; a forced SCIFI_CHECK_VIEW says every kind it passed over;
// SCIFI_CHECK_VIEW and SCIFI_CHECK_COPY_MAX_BYTES are read at run start, runner/run/setup.ts). The finding:
// A37C-4 (attacker on issue 37's check views; Apptainer, a runner that is not root: fuse-overlayfs).
// Runs INSIDE the Apptainer harness: move it to test/sandbox/apptainer/a37c-fuse-sparse-copyup.inner.ts
// (imports one level deeper) when the fix lands.
//
// Doc promise (docs/loop.md, "How a check's view is made"): the view costs "a mount and one find
// ..., not a copy"; the copy it replaces keeps "sparse files kept sparse, at most 16 GiB"; the task
// folder's quota counts allocated bytes (docs/sandbox.md maxTaskFolder), so the work may leave a
// sparse file of any apparent size for almost nothing.
// What happened: fuse-overlayfs copies a lower file up whole and dense on the first change of any
// kind, a mere `touch` (utimes) included: a 256 MiB sparse file (0 bytes allocated) became 256 MiB
// of zeros in runs/<id>/checks-copy.layers/upper. The kernel overlay (Docker, root) keeps it sparse
// (metacopy; 4 KiB). So the work leaves `truncate -s 1T big.bin` (free under the quota) and the
// agent's Makefile, run by any run stage, touches it: fuse-overlayfs, the runner's own process,
// writes a terabyte into the run folder (a cluster's home or scratch file system), outside the
// sandbox and its scratch limit, and per check again. Nothing caps it: the 16 GiB cap is the copy's.
// Suggested fix: before mounting fuse-overlayfs, find files whose apparent size exceeds their
// allocation by more than the copy's cap (find -printf '%s %b') and fall back to the copy (which
// keeps them sparse and counts allocated bytes), saying why in `view`; or bound the upper layer
// (a size-limited image as for /scratch) so a copy-up past the cap fails the check, not the disk.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { dropCheckView, layersDir, makeCheckView } from "../../../runner/run/checks/check-view.ts";

const base = mkdtempSync(join(tmpdir(), "a37c-sparse-"));
afterAll(() => {
  dropCheckView(join(base, "view"));
  rmSync(base, { recursive: true, force: true });
});

it("a check touching a huge sparse file the work left does not make the runner write it out", () => {
  expect(process.getuid?.()).not.toBe(0);
  const task = join(base, "task");
  mkdirSync(task, { recursive: true });
  writeFileSync(join(task, "big.bin"), "");
  truncateSync(join(task, "big.bin"), 256 * 1024 * 1024);
  expect(statSync(join(task, "big.bin")).blocks).toBe(0);
  const view = makeCheckView(task, join(base, "view"), { maxBytes: 16 * 1024 ** 3 });
  // What the agent's code in a run stage does: a metadata change, no data written.
  execFileSync("touch", [join(view.dir, "big.bin")]);
  const upper = join(layersDir(view.dir), "upper", "big.bin");
  const copied = view.kind === "copy" ? join(view.dir, "big.bin") : upper;
  const allocated = statSync(copied).blocks * 512;
  expect(`${view.kind}: ${allocated} bytes allocated`).toBe(
    `${view.kind}: ${Math.min(allocated, 1024 * 1024)} bytes allocated`,
  );
});
