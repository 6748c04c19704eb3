// Engine gates for tests that need real services. On a laptop without the engine a suite skips;
// `.ci/run` sets SCIFI_REQUIRE_ENGINES=all (or a comma list) so that a missing engine FAILS instead.
import { execFileSync } from "node:child_process";

export type Engine = "docker" | "apptainer" | "slurm" | "chromium";

const probes: Record<Engine, () => boolean> = {
  docker: () => ok("docker", ["info", "--format", "{{.ServerVersion}}"]),
  apptainer: () => ok("docker", ["image", "inspect", "scifi-apptainer-harness"]),
  slurm: () => ok("sinfo", ["-h"]),
  chromium: () => ok("chromium", ["--version"]),
};

function ok(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: "ignore", timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

const cache = new Map<Engine, boolean>();

function required(engine: Engine): boolean {
  const list = (process.env.SCIFI_REQUIRE_ENGINES ?? "").split(",").map((s) => s.trim());
  return list.includes("all") || list.includes(engine);
}

/**
 * True when the engine answers. When it does not: throws if CI requires it, else returns false
 * so the suite can `describe.skipIf(!hasEngine(...))`.
 */
export function hasEngine(engine: Engine): boolean {
  let present = cache.get(engine);
  if (present === undefined) {
    present = probes[engine]();
    cache.set(engine, present);
  }
  if (!present && required(engine)) {
    throw new Error(
      `engine '${engine}' is required (SCIFI_REQUIRE_ENGINES=${process.env.SCIFI_REQUIRE_ENGINES}) but does not answer; start it with the script in scripts/`,
    );
  }
  return present;
}

/** A Node that cannot strip types, so bin/scifi.js relaunches under Node 24 (SCIFI_OLD_NODE, else the system's). */
export const OLD_NODE = process.env.SCIFI_OLD_NODE ?? "/usr/bin/node";

/**
 * OLD_NODE's version when it is older than 22.18 (the launcher's relaunch), else undefined. Where CI
 * requires every engine (SCIFI_REQUIRE_ENGINES=all) a missing one fails rather than skips.
 */
export function oldNodeVersion(): string | undefined {
  let version: string | undefined;
  try {
    version = execFileSync(OLD_NODE, ["--version"], { encoding: "utf8" }).trim().slice(1);
  } catch {
    version = undefined;
  }
  const [major = 0, minor = 0] = (version ?? "99").split(".").map(Number);
  const old = version !== undefined && (major < 22 || (major === 22 && minor < 18)) ? version : undefined;
  if (!old && /\ball\b/.test(process.env.SCIFI_REQUIRE_ENGINES ?? ""))
    throw new Error(
      `no Node older than 22.18 at ${OLD_NODE} (set SCIFI_OLD_NODE, or: apt-get install nodejs)`,
    );
  return old;
}
