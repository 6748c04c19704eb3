// The Apptainer twin of test/run/a41d-sigterm-leftovers.e2e.test.ts (issue 41, a41d), INSIDE the
// harness as the non-root user: SIGTERM to `scifi run` (the real CLI, a scripted model, labelled
// scripted) while a check's run stage runs on its view of the task folder (fuse-overlayfs here, a
// runner that is not root). The run ends through its own exit (sandbox/live.ts waits for it): exit
// 143, no instance left, the check's view unmounted, the hidden check asset back in the task folder.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { sifFileName } from "../../../runner/sandbox/apptainer.ts";
import { CLI } from "../../attack/a41-run.ts";
import { HIDDEN, mountsUnder, script, type Workspace, workspace } from "../../attack/a41d-run.ts";
import { waitFor } from "../../run/harness.ts";

const IMAGE = "scifi-sci:local";

/** The instances of this user still running. */
function instances(): string[] {
  const out = execFileSync("apptainer", ["instance", "list", "--json"], { encoding: "utf8" });
  return ((JSON.parse(out || "{}") as { instances?: { instance: string }[] }).instances ?? []).map(
    (i) => i.instance,
  );
}

let ws: Workspace | undefined;
afterEach(() => {
  // A view left mounted would hold the harness's tmp: unmount it (fusermount, not root).
  for (const m of ws ? mountsUnder(ws.root).reverse() : [])
    spawnSync("fusermount", ["-uz", m], { stdio: "ignore" });
});

describe("a41d: SIGTERM during the checks ends `scifi run` cleanly (apptainer)", { timeout: 300_000 }, () => {
  beforeAll(() => {
    expect(process.getuid?.()).not.toBe(0);
    const sif = join(process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif", sifFileName(IMAGE));
    expect(existsSync(sif), `no SIF for ${IMAGE} at ${sif}`).toBe(true);
  });

  it("exit 143, no view left mounted, the hidden check asset back in the task folder", async () => {
    ws = workspace();
    const child = spawn(
      process.execPath,
      [CLI, "run", ws.taskDir, "--model", `scripted:${script({ checkSec: 60 })}`, "--backend", "apptainer"],
      { env: { ...process.env, SCIFI_HOME: ws.home }, stdio: ["ignore", "ignore", "pipe"] },
    );
    let err = "";
    child.stderr?.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    await waitFor(() => (/phase checks/.test(err) ? true : undefined), 180_000);
    await new Promise((r) => setTimeout(r, 3_000));
    // The check's view is mounted now (its run stage sleeps in `make clean`).
    const during = mountsUnder(ws.root);
    child.kill("SIGTERM");
    expect(await exit, err).toBe(143);
    expect(during.length, `no view was mounted when the signal came\n${err}`).toBeGreaterThan(0);
    expect(mountsUnder(ws.root), "mounts left after SIGTERM").toEqual([]);
    expect(instances()).toEqual([]);
    expect(existsSync(join(ws.taskDir, HIDDEN)), `${HIDDEN} missing from the task folder\n${err}`).toBe(true);
  });
});
