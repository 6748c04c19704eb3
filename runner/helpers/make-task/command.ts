// The make-task command body (kept out of runner/cli so it loads lazily and is testable in-process).
import { existsSync, lstatSync } from "node:fs";
import { resolve } from "node:path";
import { EXIT } from "../../exit-codes.ts";
import { homePaths, scifiHome } from "../../paths.ts";
import { formatDiagnostic } from "../../sam/diagnostics.ts";
import { loadSkills, skillDirs } from "../../skills/index.ts";
import { type HelperCommandOptions, helperOutput, withHelperSession } from "../session.ts";
import { makeTask } from "./make-task.ts";
import { draftName, draftPath, inboxOf, OutputExists, writeDraft } from "./write.ts";

export interface MakeTaskCommandOptions extends HelperCommandOptions {
  /** `-o`: where the draft goes (default: `<name>.md` in the current folder). */
  output?: string;
  /** `--to-inbox`: a person who has read the draft puts it into the daemon's inbox. */
  toInbox?: boolean;
  /** The current folder (default: the process's). */
  cwd?: string;
  /** Folders a running daemon starts tasks from, besides `<home>/tasks` (the CLI adds a live daemon's). */
  inboxes?: readonly string[];
}

export async function runMakeTask(request: string, options: MakeTaskCommandOptions): Promise<number> {
  const { out, err } = helperOutput(options);
  const home = scifiHome(options.env);
  const rank = Number(options.rank ?? "1");
  if (!request.trim()) return usage(err, "the request is empty; say what the task should do");
  if (!Number.isInteger(rank) || rank < 1)
    return usage(err, `--rank must be a whole number >= 1, got '${options.rank}'`);
  if (options.output && existsSync(options.output) && !options.force) {
    return usage(err, `${options.output} already exists; choose another file with -o, or pass --force`);
  }
  if (options.output && isLink(resolve(options.cwd ?? process.cwd(), options.output))) {
    return usage(
      err,
      `${options.output} is a symbolic link; the draft is not written through links: remove it or choose another file with -o`,
    );
  }
  const place = { output: options.output, toInbox: options.toInbox, cwd: options.cwd ?? process.cwd() };
  const inboxes = [homePaths(home).tasks, ...(options.inboxes ?? [])];
  // Checked before any model call, on the place the draft would have (its name is not known yet;
  // the folder is what counts).
  const inbox = inboxOf(draftPath(home, place, "new-task"), inboxes);
  if (inbox && !options.toInbox) {
    return usage(
      err,
      `${draftPath(home, place, "new-task").replace(/new-task\.md$/, "<name>.md")} is inside the daemon's inbox ${inbox}, which starts every task that appears there; write the draft elsewhere (-o FILE, or the current folder), read it, then move it in, or pass --to-inbox`,
    );
  }
  const { skills } = loadSkills(skillDirs(homePaths(home).skills));
  return withHelperSession(
    { home, helper: "make-task", model: options.model, env: options.env },
    err,
    async (session) => {
      // Validate against the final location, so relative paths resolve as they will when run.
      const provisional = draftPath(home, place, "new-task");
      const result = await makeTask({
        request,
        model: session.model,
        runId: session.runId,
        skills,
        outputFile: provisional,
        rank,
      });
      session.record("request.txt", `${request}\n`);
      for (const [i, a] of result.attempts.entries()) session.record(`draft-${i + 1}.md`, a.draft);
      if (!result.ok) {
        // Refused by the gate every entry point runs (what `scifi validate` would say of the draft
        // at its place): nothing is written there, exit 2 as for any SAM refused on the way in.
        const last = result.attempts.at(-1)?.diagnostics ?? [];
        err(
          `scifi make-task: no valid SAM after ${result.attempts.length} tries; nothing was written; last problems (as scifi validate would report them for ${provisional}):\n`,
        );
        for (const d of last) err(`${formatDiagnostic(d)}\n`);
        err(`drafts and the audit tape are in ${session.runDir}\n${session.tapeLine()}`);
        return EXIT.usage;
      }
      const path = draftPath(home, place, draftName(result.text));
      try {
        writeDraft(path, result.text, options.force ?? false);
      } catch (e) {
        if (!(e instanceof OutputExists)) throw e;
        err(`scifi make-task: ${e.message}\nthe draft is kept in ${session.runDir}\n`);
        return EXIT.usage;
      }
      out(
        `wrote ${path} (valid after ${result.attempts.length} ${result.attempts.length === 1 ? "try" : "tries"}; nothing was run)\n`,
      );
      if (result.withheld.length > 0) {
        out("not granted (suggested in the file as comments; uncomment to grant):\n");
        for (const w of result.withheld) out(`  ${w.yaml}  (${w.why})\n`);
      }
      out(
        inbox
          ? `it is in the daemon's inbox ${inbox} (--to-inbox): a running daemon starts it\n${session.tapeLine()}`
          : `review it, then: scifi validate ${path}; to run it, move it into the inbox (${homePaths(home).tasks}) or scifi run ${path}\n${session.tapeLine()}`,
      );
      return EXIT.ok;
    },
  );
}

function usage(err: (t: string) => void, message: string): number {
  err(`scifi make-task: ${message}\n`);
  return EXIT.usage;
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
