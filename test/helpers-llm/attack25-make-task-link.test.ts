// Found by the issue-25 attacker session (was test/open/a25-make-task-link.pending.ts); fixed: the draft
// is never written through a link at its name (refused; new files created O_EXCL|O_NOFOLLOW).
// Attacker session for issue 25 (A25-6): `scifi make-task` writes its draft into the daemon's inbox
// through a link at the draft's own name.
//
// Docs promise (docs/helpers.md): "Never into the inbox by itself: ... A place inside
// `<home>/tasks/` (... links resolved; the current folder counts when no `-o` is given) is refused
// before any model call (exit 2), unless `--to-inbox` is given"; "an existing file is not replaced
// without `--force`".
//
// What happened: the check resolves links of the draft's FOLDER only. A dangling link at the file
// itself (`gaussian-fit.md -> ~/.scifi/tasks/gaussian-fit.md`, or `-o draft.md` the same way) is
// "not existing" to existsSync, passes the inbox check (its folder is the current one), and
// writeFileSync follows it: the draft lands in `tasks/`, where a running daemon starts it, while
// the command prints "wrote <cwd>/gaussian-fit.md ... nothing was run". Who plants the link: an
// earlier agent, in the task folder it delivered, where a person later drafts the follow-up task
// (the draft's name is the model's `name:`, and the task's own name is easy to guess).
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runMakeTask } from "../../runner/helpers/make-task/command.ts";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "helpers", "make-task");
const REQUEST =
  "Fit a Gaussian to the energy column of data/energies.csv and write mu and sigma to out/fit.json";
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

async function draftIn(output: string | undefined) {
  const home = mkdtempSync(join(tmpdir(), "scifi-a25-make-task-"));
  roots.push(home);
  mkdirSync(join(home, "tasks"));
  const delivered = join(home, "delivered-task");
  mkdirSync(delivered);
  symlinkSync(join(home, "tasks", "gaussian-fit.md"), join(delivered, output ?? "gaussian-fit.md"));
  const out: string[] = [];
  const code = await runMakeTask(REQUEST, {
    model: `scripted:${join(FIXTURES, "repair.yaml")}`,
    env: { ...process.env, SCIFI_HOME: home },
    cwd: delivered,
    ...(output ? { output } : {}),
    out: (t) => out.push(t),
    err: (t) => out.push(t),
  });
  return { code, inbox: join(home, "tasks", "gaussian-fit.md"), out: out.join("") };
}

describe("A25-6: make-task through a link at the draft's name", () => {
  it("the default name: nothing lands in the inbox", async () => {
    const r = await draftIn(undefined);
    expect(existsSync(r.inbox)).toBe(false);
  });

  it("-o draft.md: nothing lands in the inbox", async () => {
    const r = await draftIn("draft.md");
    expect(existsSync(r.inbox)).toBe(false);
  });
});
