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
