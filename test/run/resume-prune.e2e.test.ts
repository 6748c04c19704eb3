// `scifi run --resume` of a run that a live process still drives is refused before anything is
// touched: the run lock is checked before the orphan prune, so not even another orphan of the home
// is removed by the refused resume (issue 14). Real Docker engine.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { runTask } from "../../runner/run/setup.ts";
import { lockRun, RunLocked } from "../../runner/run/task-folder/run-lock.ts";
import { openRunFolder } from "../../runner/run-folder/folder.ts";
import { containerName, createDockerBackend } from "../../runner/sandbox/docker.ts";
import { hasEngine } from "../helpers/engines.ts";

describe.skipIf(!hasEngine("docker"))("resume checks the run lock before it prunes", () => {
  it("refuses a resume of a live run and leaves every sandbox of the home alone", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-resume-prune-"));
    const folder = openRunFolder(home, "run-1");
    mkdirSync(folder.dir, { recursive: true });
    writeFileSync(folder.files.state, JSON.stringify({ version: 1, runId: "run-1", backend: "docker" }));
    // An orphan of this home (its runner is gone): a resume that got as far as pruning removes it.
    const docker = new Docker();
    const orphan = `resume-orphan-${Date.now()}`;
    const container = await docker.createContainer({
      name: containerName(orphan),
      Image: "scifi-base:bookworm",
      Entrypoint: ["sleep", "infinity"],
      Labels: {
        scifi: "1",
        "scifi.run": orphan,
        "scifi.host": hostname(),
        "scifi.pid": String(spawnSync("true").pid ?? 0),
        "scifi.home": realpathSync(home),
      },
    });
    await container.start();
    const unlock = lockRun(folder, "run-1"); // a live driver
    try {
      await expect(runTask({ home, resume: "run-1", backend: "docker" })).rejects.toBeInstanceOf(RunLocked);
      expect((await container.inspect()).State.Running).toBe(true);
    } finally {
      unlock();
      // The home's own prune takes the orphan (the same call the resume makes once the run is free).
      const removed = await createDockerBackend().prune({ home });
      expect(removed.join()).toContain(orphan);
      await container.remove({ force: true }).catch(() => undefined);
    }
  });
});
