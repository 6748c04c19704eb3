// Attacker on issue 37's check views (a37c), what held for a runner that is not root (Apptainer, as
// on a cluster): fuse-overlayfs and the copy (test/attack/a37c-held-suite.ts).
import { expect, it } from "vitest";
import { a37cHeldSuite } from "../../attack/a37c-held-suite.ts";
import { kinds } from "../../run/checks/check-view-suite.ts";

it("runs as a user that is not root, where fuse-overlayfs mounts", () => {
  expect(kinds).toEqual(["fuse-overlayfs", "copy"]);
});

a37cHeldSuite(kinds);
