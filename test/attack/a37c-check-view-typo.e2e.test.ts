// Fixed (runner/run/checks/check-view.ts: a task folder holding a `.wh.` name or a large sparse file gets the copy, not
// fuse-overlayfs, and the reason is recorded; a forced SCIFI_CHECK_VIEW says every kind it passed over;
// SCIFI_CHECK_VIEW and SCIFI_CHECK_COPY_MAX_BYTES are read at run start, runner/run/setup.ts). The finding:
// A37C-3 (attacker on issue 37's check views; Docker here, any backend).
// Doc promise (docs/loop.md, "How a check's view is made"): `SCIFI_CHECK_VIEW=copy` (or a
// comma-separated list of kinds) forces the choice; the error for an unknown kind is written
// (task-folder.ts viewKinds) to be read before anything runs ("Errors say what failed and what to do").
// What happened: SCIFI_CHECK_VIEW is read only when the first run stage's view is made. With a typo
// (`overlayfs`) the whole work pass runs (every model call spent, the task folder changed), then
// runTask throws a plain Error: state.json is left at phase `work` with no outcome, error.json has
// kind "other", no check ran and no verdict is recorded. A person's setting, not the agent, ends
// the run after its spend.
// Suggested fix: parse SCIFI_CHECK_VIEW with the other settings at run start (setup.ts), refusing
// an unknown kind before the first sandbox starts (exit 2 with the same message), and refuse a
// list with no kind this runner can mount; `scifi validate`/`doctor` may say so too.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { readHistory } from "../../runner/memory/history.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { HONEST, leakWorkspace, runLeakTask } from "./a37c-run.ts";

describe.skipIf(!hasEngine("docker"))("a37c: a typo in SCIFI_CHECK_VIEW", { timeout: 300_000 }, () => {
  beforeAll(() => ensureImage(), 1_800_000);
  afterEach(() => {
    delete process.env.SCIFI_CHECK_VIEW;
  });

  it("is refused before the work runs, not after it", async () => {
    process.env.SCIFI_CHECK_VIEW = "overlayfs";
    const ws = leakWorkspace();
    const error = await runLeakTask(HONEST, "docker", ws).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(error)).toContain("SCIFI_CHECK_VIEW");
    // Nothing of the work may have run: the agent's `rm debug.log` did not happen.
    expect(readdirSync(ws.taskDir).sort()).toEqual(["debug.log", "task.md"]);
    const runs = join(ws.home, "runs");
    for (const id of existsSync(runs) ? readdirSync(runs) : []) {
      const types = readHistory(join(runs, id, "history.jsonl")).map((e) => e.type);
      expect(types).not.toContain("work_end");
    }
  });
});
