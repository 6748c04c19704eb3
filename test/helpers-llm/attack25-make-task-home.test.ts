// Found by the issue-25 attacker session (was test/open/a25-make-task-home.pending.ts); fixed: any folder
// a live daemon holds as its inbox (its .scifi-daemon.lock) is refused, whatever home it runs under.
// Attacker session for issue 25 (A25-9): `scifi make-task` writes its draft into the inbox of a
// daemon that runs under ANOTHER scifi home, and that daemon starts it.
//
// Docs promise (docs/helpers.md): "A place inside `<home>/tasks/` (or a running daemon's
// `--inbox`, links resolved ...) is refused before any model call (exit 2), unless `--to-inbox`".
//
// What happened: the command only knows the daemon of its own home (runner/cli/commands/
// make-task.ts reads `<its home>/daemon/daemon.lock`). A person with two homes (a lab-wide one
// the daemon runs under, `SCIFI_HOME=/lab/scifi`, and their own default) who drafts with
// `-o /lab/scifi/tasks/fit.md` from their own shell gets "wrote ... nothing was run; review it",
// and the lab daemon takes the unreviewed draft up at once. Whether the fix is a check of every
// daemon lock the user can see or a narrower doc ("the daemon of this home") is the lead's call.
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runMakeTask } from "../../runner/helpers/make-task/command.ts";
import { makeHome, type RunningDaemon, startDaemon, tasksByKey, waitFor } from "../daemon/harness.ts";
import { REPO } from "../run/harness.ts";

const SCRIPT = `scripted:${join(REPO, "test", "fixtures", "helpers", "make-task", "repair.yaml")}`;
const REQUEST =
  "Fit a Gaussian to the energy column of data/energies.csv and write mu and sigma to out/fit.json";

describe("A25-9: make-task beside a daemon of another home", () => {
  const lab = makeHome();
  let daemon: RunningDaemon | undefined;
  afterAll(async () => {
    if (daemon) {
      daemon.child.kill("SIGTERM");
      await daemon.exited;
    }
  });

  it("-o into the running daemon's inbox is refused, whatever home the command uses", async () => {
    daemon = startDaemon(lab, ["--concurrency", "1"]);
    await waitFor("the daemon's lock", () => existsSync(join(lab.home, "daemon", "daemon.lock")));
    const mine = mkdtempSync(join(tmpdir(), "scifi-a25-own-home-"));
    mkdirSync(join(mine, "tasks"));
    const err: string[] = [];
    const code = await runMakeTask(REQUEST, {
      model: SCRIPT,
      env: { ...process.env, SCIFI_HOME: mine },
      cwd: mine,
      output: join(lab.inbox, "fit.md"),
      out: () => {},
      err: (t) => err.push(t),
    });
    const written = existsSync(join(lab.inbox, "fit.md"));
    if (written) await waitFor("the lab daemon to take it up", () => tasksByKey(lab).has("fit.md"));
    expect({ code, written }, err.join("")).toEqual({ code: 2, written: false });
  }, 120_000);
});
