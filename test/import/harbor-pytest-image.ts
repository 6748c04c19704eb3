// The image the import tests map pytest into: scifi-sci:local has no pytest (the import asks it and
// refuses), so the tests build this small image from it with Debian's python3-pytest, the way a site
// would add what its tasks' tests install.
import { execFileSync } from "node:child_process";
import { ensureImage } from "../run/harness.ts";

export const PYTEST_IMAGE = "scifi-harbor-pytest:test";

export function ensurePytestImage(): void {
  ensureImage();
  execFileSync("docker", ["build", "-q", "-t", PYTEST_IMAGE, "-"], {
    input:
      "FROM scifi-sci:local\nRUN apt-get update && apt-get install -y --no-install-recommends python3-pytest && rm -rf /var/lib/apt/lists/*\n",
    stdio: ["pipe", "ignore", "inherit"],
    timeout: 600_000,
  });
}
