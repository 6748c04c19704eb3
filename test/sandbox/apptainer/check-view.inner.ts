// A run stage's view of the task folder, non-root inside the harness (as on a cluster):
// fuse-overlayfs and the copy (test/run/checks/check-view-suite.ts).
import { expect, it } from "vitest";
import { checkViewSuite, kinds } from "../../run/checks/check-view-suite.ts";

it("runs as a user that is not root, where fuse-overlayfs mounts", () => {
  expect(process.getuid?.()).not.toBe(0);
  expect(kinds).toEqual(["fuse-overlayfs", "copy"]);
});

checkViewSuite();
