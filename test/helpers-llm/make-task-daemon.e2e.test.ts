// `scifi make-task` with a daemon running (issue 25): a draft is for a person to read, so it lands
// in the current folder (or -o), never in the inbox the daemon starts tasks from; -o into the inbox
// is refused; only --to-inbox puts it there, and then the daemon does take it up (which shows the
// daemon was watching all along).
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { makeHome, type RunningDaemon, scifi, startDaemon, tasksByKey, waitFor } from "../daemon/harness.ts";
import { REPO } from "../run/harness.ts";

const SCRIPT = `scripted:${join(REPO, "test", "fixtures", "helpers", "make-task", "repair.yaml")}`;
const REQUEST =
  "Fit a Gaussian to the energy column of data/energies.csv and write mu and sigma to out/fit.json";

describe("scifi make-task beside a running daemon", () => {
  const h = makeHome();
  let daemon: RunningDaemon | undefined;
  afterAll(async () => {
    if (daemon) {
      daemon.child.kill("SIGTERM");
      await daemon.exited;
    }
  });

  it("writes the draft to the current folder; the daemon never starts it; -o into the inbox is refused", async () => {
    daemon = startDaemon(h, ["--concurrency", "1"]);
    await waitFor("the daemon's lock", () => existsSync(join(h.home, "daemon", "daemon.lock")));
    const made = scifi(h, ["make-task", REQUEST, "--model", SCRIPT]);
    expect(made.code, made.stderr).toBe(0);
    const draft = join(h.home, "gaussian-fit.md");
    expect(made.stdout).toContain(`wrote ${draft}`);
    expect(existsSync(draft)).toBe(true);
    expect(readdirSync(h.inbox).filter((f) => !f.startsWith("."))).toEqual([]);

    const refused = scifi(h, ["make-task", REQUEST, "--model", SCRIPT, "-o", join(h.inbox, "fit.md")]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`is inside the daemon's inbox ${h.inbox}`);
    expect(readdirSync(h.inbox).filter((f) => !f.startsWith("."))).toEqual([]);

    // Time for the daemon to have seen anything (settle 300 ms): it knows no task.
    await new Promise((r) => setTimeout(r, 3000));
    expect([...tasksByKey(h).keys()]).toEqual([]);

    // --to-inbox: a person who read it puts it there, and the running daemon takes it up.
    const put = scifi(h, ["make-task", REQUEST, "--model", SCRIPT, "--to-inbox", "--force"]);
    expect(put.code, put.stderr).toBe(0);
    expect(put.stdout).toContain("a running daemon starts it");
    await waitFor("the daemon to take up the inboxed draft", () => tasksByKey(h).has("gaussian-fit.md"));
  }, 180_000);
});
