// What a new user meets with the daemon (real `scifi daemon`, Docker, scripted model): a task
// cancelled while it runs ends `cancelled` with its report and no lock, and the index says so; a
// single-file SAM whose check assets were dropped beside it is rejected with the hint that it
// needs a folder, and once deleted it leaves status with its `.rejected.txt`; `scifi status` lists
// a `scifi run` started outside the daemon.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { runDir, runFiles } from "../../runner/paths.ts";
import type { RunState } from "../../runner/run-folder/state.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../run/harness.ts";
import {
  dropFile,
  dropFolder,
  fixtureText,
  makeHome,
  type RunningDaemon,
  scifi,
  startDaemon,
  stopDaemons,
  tasksByKey,
  waitFor,
} from "./harness.ts";

const started: RunningDaemon[] = [];
afterEach(() => stopDaemons(started));

const WITH_ASSET = `---
name: fit-alone
check_assets: [checks/check.py]
---
# A single-file task with a check asset

## To-do
Write \`out.txt\`.

## Expectation
- \`out.txt\` passes the check.
  \`\`\`check
  python3 checks/check.py
  \`\`\`
`;

describe.skipIf(!hasEngine("docker"))("the daemon for a new user (Docker, scripted model)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("cancel is an outcome; a rejected SAM gets its hint and leaves when deleted; status lists scifi run", async () => {
    const h = makeHome();
    const d = startDaemon(h, ["--concurrency", "1"]);
    started.push(d);

    // A single-file SAM naming a check asset, dropped alone: rejected, with the folder hint.
    const alone = dropFile(h, "fit-alone.md", WITH_ASSET);
    const rejected = await waitFor(
      "rejected",
      () => tasksByKey(h).get("fit-alone.md")?.state === "rejected",
      30_000,
    );
    expect(rejected).toBe(true);
    expect(tasksByKey(h).get("fit-alone.md")?.reason).toContain(
      "a task with check assets needs a folder of its own",
    );
    const rejection = join(h.inbox, "fit-alone.rejected.txt");
    expect(readFileSync(rejection, "utf8")).toContain("hint: a task with check assets needs a folder");
    // Deleted: gone from status, its rejection report too.
    rmSync(alone);
    await waitFor("forgotten", () => !tasksByKey(h).has("fit-alone.md"));
    expect(existsSync(rejection)).toBe(false);
    expect(scifi(h, ["status"]).stdout).not.toContain("fit-alone");

    // Cancelled while it runs: the run ends `cancelled` through its own exit.
    dropFolder(h, "slow", fixtureText("trivial.md", "daemon-slow"), { slow: true });
    const runId = await waitFor("running with a checkpoint", () => {
      const attempt = tasksByKey(h).get("slow")?.attempts[0];
      return attempt?.runId && existsSync(runFiles(runDir(h.home, attempt.runId)).state)
        ? attempt.runId
        : undefined;
    });
    const cancel = scifi(h, ["cancel", "slow"]);
    expect(cancel.code, cancel.stderr).toBe(0);
    await waitFor("cancelled", () => tasksByKey(h).get("slow")?.state === "cancelled");
    const files = runFiles(runDir(h.home, runId));
    const state = JSON.parse(readFileSync(files.state, "utf8")) as RunState;
    expect(state.phase).toBe("ended");
    expect(state.outcome).toMatchObject({
      status: "cancelled",
      reason: "cancelled by the operator while it ran",
    });
    expect(existsSync(files.lock)).toBe(false);
    expect(readFileSync(join(runDir(h.home, runId), "report.html"), "utf8")).toContain(
      'class="status cancelled"',
    );
    const index = readFileSync(join(h.home, "runs", "index.html"), "utf8");
    expect(index).toMatch(new RegExp(`data-status="cancelled"><td><a href="./${runId}/report.html">`));
    expect(index).not.toContain("still running");

    // A run outside the daemon (one that fails at once on a reply of the wrong shape) is listed.
    const task = join(h.root, "solo");
    mkdirSync(task);
    writeFileSync(join(task, "task.md"), fixtureText("trivial.md", "solo"));
    const solo = scifi(h, [
      "run",
      task,
      "--model",
      `scripted:${join(REPO, "test", "fixtures", "runs", "prescan-wrong-shape.yaml")}`,
    ]);
    expect(solo.code).toBe(1);
    // Rows past 80 columns are folded, further rows marked `  + ` (renderStatus): joined back.
    const status = scifi(h, ["status"]).stdout.replace(/\n {2}\+ /g, "");
    expect(status).toContain("runs outside the daemon (scifi run)");
    expect(status).toMatch(
      /\d{8}-\d{6}-solo-[0-9a-f]+\s+failed\s+1\s+0\.0000\s+the prescan agent's reply did not fit/,
    );
    expect(status).not.toMatch(new RegExp(`${runId}\\s+cancelled\\s+\\d+\\s+0\\.0000\\s+cancelled`));
  }, 300_000);
});
