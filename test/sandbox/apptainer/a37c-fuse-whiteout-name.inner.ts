// Fixed (runner/run/checks/check-view.ts: a task folder holding a `.wh.` name or a large sparse file gets the copy, not
// fuse-overlayfs, and the reason is recorded; a forced SCIFI_CHECK_VIEW says every kind it passed over;
// SCIFI_CHECK_VIEW and SCIFI_CHECK_COPY_MAX_BYTES are read at run start, runner/run/setup.ts). The finding:
// A37C-1 (attacker on issue 37's check views; Apptainer, a runner that is not root: fuse-overlayfs).
// Runs INSIDE the Apptainer harness: move it to test/sandbox/apptainer/a37c-fuse-whiteout-name.inner.ts
// (imports then one level deeper) when the fix lands.
//
// Doc promise (docs/loop.md, "What a check may rely on"): "a view of the task folder exactly as the
// work left it"; "How a check's view is made": the overlay's lower layer is the task folder itself.
// What happened: fuse-overlayfs reads AUFS-style whiteout NAMES in its lower layer. A file the agent
// names `.wh.<name>` hides `<name>` in the view, whatever their order, and is itself hidden; a file
// `.wh..wh..opq` is hidden too. The kernel overlay and the copy show both files. So on Apptainer a
// check that asserts a file is gone (`test ! -e secret.txt`: "remove the leaked credentials", "no
// stray debug dump", "the old API module is deleted") passes while the delivered folder still holds
// it, and any check is shown a folder other than the work's.
// Suggested fix: in `sanitize` (or before mounting), list the lower layer for names that begin with
// `.wh.` and fall back to the copy for that view, saying why in `view` (e.g. `copy (not
// fuse-overlayfs: "…/.wh.secret.txt" is a whiteout name fuse-overlayfs would hide)`); or refuse
// such names as tampering. Both layers' names matter: `.wh.` anywhere in the tree.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { dropCheckView, makeCheckView } from "../../../runner/run/checks/check-view.ts";

const base = mkdtempSync(join(tmpdir(), "a37c-wh-"));
afterAll(() => {
  dropCheckView(join(base, "view"));
  rmSync(base, { recursive: true, force: true });
});

it("a file named .wh.<name> in the work does not hide <name> from a check's fuse-overlayfs view", () => {
  expect(process.getuid?.()).not.toBe(0);
  execFileSync("sh", ["-c", "command -v fuse-overlayfs"]);
  const task = join(base, "task");
  mkdirSync(join(task, "sub"), { recursive: true });
  // The work was asked to delete secret.txt; it keeps it and plants the whiteout name beside it.
  writeFileSync(join(task, "secret.txt"), "AKIA-LEAKED-KEY\n");
  writeFileSync(join(task, ".wh.secret.txt"), "");
  writeFileSync(join(task, "sub", "keep.txt"), "kept\n");
  writeFileSync(join(task, "sub", ".wh..wh..opq"), "");
  const view = makeCheckView(task, join(base, "view"), {
    maxBytes: 1 << 30,
    kinds: ["fuse-overlayfs", "copy"],
  });
  // Whichever kind is used, the check must see what the work left.
  const check = execFileSync("bash", ["-c", "test -e secret.txt && echo present || echo gone"], {
    cwd: view.dir,
    encoding: "utf8",
  });
  expect(`${view.kind}: ${check.trim()}`).toBe(`${view.kind}: present`);
  expect(readFileSync(join(view.dir, "secret.txt"), "utf8")).toBe("AKIA-LEAKED-KEY\n");
  expect(existsSync(join(view.dir, ".wh.secret.txt"))).toBe(true);
  expect(existsSync(join(view.dir, "sub", ".wh..wh..opq"))).toBe(true);
  expect(readFileSync(join(view.dir, "sub", "keep.txt"), "utf8")).toBe("kept\n");
});
