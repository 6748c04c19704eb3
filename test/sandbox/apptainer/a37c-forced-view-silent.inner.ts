// Fixed (runner/run/checks/check-view.ts: a task folder holding a `.wh.` name or a large sparse file gets the copy, not
// fuse-overlayfs, and the reason is recorded; a forced SCIFI_CHECK_VIEW says every kind it passed over;
// SCIFI_CHECK_VIEW and SCIFI_CHECK_COPY_MAX_BYTES are read at run start, runner/run/setup.ts). The finding:
// A37C-2 (attacker on issue 37's check views; a runner that is not root: Apptainer as on a cluster,
// or Docker's rootless case). Runs INSIDE the Apptainer harness (not root): move it to
// test/sandbox/apptainer/a37c-forced-view-silent.inner.ts (imports one level deeper) when fixed.
//
// Doc promise (docs/loop.md, "How a check's view is made"): "Each check's outcome in `state.json`
// says which kind made its view and why the kinds before it were not used (`view`)";
// `SCIFI_CHECK_VIEW` "forces the choice".
// What happened: a person who forces `SCIFI_CHECK_VIEW=overlay` (or `overlay,fuse-overlayfs`
// where FUSE is missing) on a runner that is not root gets the full copy, and `view` reads just
// `copy`: makeCheckView skips `overlay` for a non-root runner without a word ("not a fallback, not
// said") and falls through to the copy although the person never listed it. The record says
// nothing of why the forced kind was not used, nor that a kind outside the list was.
// Suggested fix: when `overlay` was asked for explicitly (SCIFI_CHECK_VIEW), record `overlay:
// the kernel overlay needs a runner that is root`; and when none of the forced kinds mounts,
// say that the copy was used although not listed (or refuse at run start, exit 2, naming the fix).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { dropCheckView, makeCheckView } from "../../../runner/run/checks/check-view.ts";

const base = mkdtempSync(join(tmpdir(), "a37c-forced-"));
afterAll(() => {
  dropCheckView(join(base, "view"));
  rmSync(base, { recursive: true, force: true });
});

it("a forced overlay on a runner that is not root says why it was not used", () => {
  expect(process.getuid?.()).not.toBe(0);
  const task = join(base, "task");
  mkdirSync(task, { recursive: true });
  writeFileSync(join(task, "a.txt"), "a\n");
  const view = makeCheckView(task, join(base, "view"), { maxBytes: 1 << 30, kinds: ["overlay"] });
  expect(view.kind).toBe("copy");
  // What the person reads in state.json's `view` (phases/checks.ts joins kind and notUsed).
  const shown = [view.kind, ...view.notUsed.map((why) => `(not ${why})`)].join(" ");
  expect(shown).toMatch(/not overlay: .*root/);
});
