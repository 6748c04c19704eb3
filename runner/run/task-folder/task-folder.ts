// The task-folder guard: the runner's pristine copies of what the verdict depends on (SAM files and
// check assets, taken before any agent runs), hidden assets kept out of the folder until the checks
// that see them and given back when the run ends, SAM files and assets put back before the checks
// and the review (anything else at their paths is tampering), and each run stage's throw-away view.
import { existsSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import type { CheckOutcome, PristineSet } from "../../run-folder/state.ts";
import type { SamDocument } from "../../sam/types.ts";
import { visible } from "../../terminal-text.ts";
import {
  type CheckView,
  checkViewKinds,
  dropCheckView,
  makeCheckView,
  VIEW_FOLDERS,
} from "../checks/check-view.ts";
import { Tampering } from "../checks/checks.ts";
import { deliveredManifest, manifestDifferences, readManifest, writeManifest } from "../checks/delivered.ts";
import type { RunRecords } from "../session/context.ts";
import type { IntegrityInput } from "../session/integrity.ts";
import { messageOf } from "../session/outcomes.ts";
import {
  capturePristine,
  deliverableLinks,
  type FolderIds,
  folderIds,
  hideAssets,
  type PristineRequest,
  restorePristine,
} from "./pristine.ts";

/** The checks' copy of the task folder stops at this many allocated bytes (the run fails beyond). */
export const CHECK_COPY_MAX_BYTES = 16 * 1024 ** 3;

/**
 * The cap in force: CHECK_COPY_MAX_BYTES, or lower when SCIFI_CHECK_COPY_MAX_BYTES says so (tests
 * reach the cap without writing 16 GiB). It can only lower the cap; any other value is an error.
 */
export function checkCopyMaxBytes(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SCIFI_CHECK_COPY_MAX_BYTES;
  if (raw === undefined || raw === "") return CHECK_COPY_MAX_BYTES;
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= 1 && value <= CHECK_COPY_MAX_BYTES))
    throw new Error(
      `SCIFI_CHECK_COPY_MAX_BYTES=${JSON.stringify(raw)} is not a whole number of bytes from 1 to ${CHECK_COPY_MAX_BYTES} (it can only lower the checks' copy cap); unset it or give such a number`,
    );
  return value;
}

/**
 * At run start: the runner's own copies of the SAM files and check assets (into `pristineDir`);
 * hidden assets then leave the task folder until the checks (and come back when the run ends).
 */
export function takePristine(sam: SamDocument, taskDir: string, pristineDir: string): PristineSet {
  const pristine = capturePristine(taskDir, pristineRequests(sam, taskDir), pristineDir);
  hideAssets(taskDir, pristine);
  return pristine;
}

/** Only the work agent (and its code) writes in the task folder: what is found there is its doing. */
const WORK = "work";

export class TaskFolderGuard {
  readonly #records: RunRecords;
  /** Where the guard's integrity events go (the session sets it). */
  onIntegrity: (input: IntegrityInput) => void = () => {};
  /** The asset folders as they stood when the guard was made (no agent runs then): a rename is seen. */
  readonly #folderIds: FolderIds;
  constructor(records: RunRecords) {
    this.#records = records;
    this.#folderIds = folderIds(records.spec.taskDir, records.state.pristine.folders);
  }

  /**
   * Puts SAM files and check assets back from the runner's copies and cleans asset folders. Anything
   * at those paths that was not the same regular file is tampering, and ends the run.
   */
  restore(): void {
    const { state, spec, folder, history } = this.#records;
    const report = restorePristine(
      spec.taskDir,
      folder.files.pristine,
      state.pristine,
      false,
      this.#folderIds,
    );
    if (report.removed.length > 0) {
      history.append({ type: "asset_cleanup", iteration: state.iteration, removed: report.removed });
    }
    // Byte-code caches of the folder's own assets come from running a visible check (honest work):
    // removed, on the history, but no integrity event (docs/integrity.md, "What is not counted").
    const added = report.removed.filter((r) => !report.caches.includes(r));
    if (added.length > 0) {
      this.onIntegrity({
        kind: "asset_cleanup",
        role: WORK,
        call: null,
        attempted: `files added to check-asset folders: ${added.map((r) => JSON.stringify(r)).join(", ")}`,
        rule: "check-asset folders hold exactly their start content (nothing of the agent's beside an asset)",
        action: "removed before the next phase",
      });
    }
    if (report.tampering.length === 0) return;
    const byRel = new Map(state.pristine.files.map((f) => [f.rel, f]));
    throw new Tampering(
      report.tampering.map((t) => {
        const file = byRel.get(t.file);
        return {
          ...t,
          absolute: join(spec.taskDir, t.file),
          what: file?.kind === "sam" ? "SAM file" : file ? "check asset" : "check asset folder",
          expected: file?.sha256 ?? "folder",
          actual: t.problem,
        };
      }),
    );
  }

  /** Symlinks that are not deliverables, on the history; the notice the checks print, if any. */
  async linksNotice(): Promise<string | undefined> {
    const { state, spec, history } = this.#records;
    const links = await deliverableLinks(spec.taskDir);
    if (links.length === 0) return undefined;
    history.append({ type: "deliverable_links", iteration: state.iteration, links });
    return linksNoticeText(links);
  }

  /**
   * Where run stages' views of the task folder go (in the run folder; only that stage's sandbox
   * mounts it): two, the running stage's and the next one's, made ready while it runs (phases/checks.ts).
   */
  get checksCopyDirs(): string[] {
    return VIEW_FOLDERS.map((f) => join(this.#records.folder.dir, f));
  }

  /**
   * The task folder as the work left it, in a view of the run's own (one run stage's): copy-on-write
   * where it can be mounted, else a copy (check-view.ts). Which one, and why not the others, the
   * checks' outcomes say (phases/checks.ts).
   */
  copyForChecks(checkDir: string): CheckView {
    const { state, spec, history } = this.#records;
    const root = process.getuid?.() === 0;
    const view = makeCheckView(spec.taskDir, checkDir, {
      maxBytes: checkCopyMaxBytes(),
      kinds: checkViewKinds(),
      engineIsOtherUser: state.backend === "docker",
      ...(root ? { owner: spec.user } : {}),
    });
    const skipped = view.skipped;
    // On the history, but no integrity event: a FIFO or a socket in the task folder is an honest
    // idiom (a named pipe, a worker's socket), and one at a path a check reads only makes the check
    // fail. A declared output that is one is refused and counted (stages.ts StageOutputs).
    if (skipped.length > 0) {
      history.append({ type: "asset_cleanup", iteration: state.iteration, removed: skipped });
    }
    return view;
  }

  /** A view (or any folder the checks used) unmounted if mounted, and removed. */
  dropChecksCopy(checkDir: string): void {
    dropCheckView(checkDir);
  }

  /** Records what the checks judged (delivered.ts): the task folder as it is after them. */
  async recordDelivered(): Promise<void> {
    const { state, spec } = this.#records;
    writeManifest(this.#deliveredFile(state.iteration), await deliveredManifest(spec.taskDir));
  }

  /**
   * Whether the task folder still holds what the checks of this iteration judged: undefined when it
   * does, else what changed (the run then fails).
   */
  async deliveredChanges(): Promise<string | undefined> {
    const { state, spec } = this.#records;
    const file = this.#deliveredFile(state.iteration);
    if (!existsSync(file)) return undefined;
    const changes = manifestDifferences(readManifest(file), await deliveredManifest(spec.taskDir));
    if (changes.length === 0) return undefined;
    return `the task folder changed after the checks judged it (${changes.join(", ")}): the verdict does not cover what is delivered`;
  }

  #deliveredFile(iteration: number): string {
    return join(this.#records.folder.dir, `delivered-it${iteration}.json`);
  }

  /**
   * Each tampered path of `error` as a `tampering` history event; one integrity event each, except
   * the files of a tampered asset folder, named in the folder's one event (one rename, one event).
   */
  recordTampering(error: Tampering): void {
    const { state, history } = this.#records;
    const folders = new Set(error.found.map((f) => f.file));
    for (const found of error.found) {
      history.append({
        type: "tampering",
        iteration: state.iteration,
        file: found.absolute,
        problem: found.problem,
        expected: found.expected,
        actual: found.actual,
      });
    }
    for (const found of error.found) {
      if (found.within !== undefined && folders.has(found.within)) continue;
      this.onIntegrity({
        kind: "asset_tampering",
        role: WORK,
        call: null,
        attempted: `${found.what} ${JSON.stringify(found.absolute)} changed: ${found.problem}`,
        rule: "SAM files and check assets are compared with the runner's copies (trust.md rule 2)",
        action: "put back from the runner's copy; the run fails as tampering",
      });
    }
  }

  /**
   * At every end of a run (passed, failed, blocked, limit, cancelled, crashed): SAM files and assets
   * compared with the runner's copies and put back, tampering recorded, before anything else (the
   * hidden assets) goes back into the task folder. Never throws: the run is ending.
   */
  restoreAtEnd(): void {
    const { state, history } = this.#records;
    try {
      this.restore();
    } catch (error) {
      if (!(error instanceof Tampering)) {
        history.append({
          type: "limit",
          iteration: state.iteration,
          limit: "restore",
          detail: `could not restore the SAM files and check assets at the end of the run: ${messageOf(error)}`,
        });
        return;
      }
      this.recordTampering(error);
      // restore() put back what it could before reporting; a second pass repairs what the first
      // only found (a replaced folder chain), so the folder holds the pristine files.
      try {
        this.restore();
      } catch {
        // Recorded above.
      }
    }
  }

  /**
   * A compare stage's output and exit code can carry what it saw (the reference it quotes in a diff),
   * and the history, the review brief and task memory all reach agents: they go to
   * `runs/<id>/check-output/` for people; agents learn pass or fail only.
   */
  withheld(outcome: CheckOutcome): CheckOutcome {
    const { folder, state } = this.#records;
    const dir = join(folder.dir, "check-output");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, `it${state.iteration}-${outcome.id.replace(/[^A-Za-z0-9._-]+/g, "_")}.txt`);
    writeFileSync(
      file,
      `exit ${outcome.exitCode}${outcome.timedOut ? " (timed out)" : ""}\n${outcome.output}`,
      {
        mode: 0o600,
      },
    );
    // Its exit code is withheld too: the agent's code could choose it from what it read.
    return {
      ...outcome,
      exitCode: outcome.passed ? 0 : 1,
      output: `(output and exit code withheld from the agents: a compare stage says pass or fail only; see ${relative(folder.dir, file)} in the run folder)`,
      heldOutput: relative(folder.dir, file).split(sep).join("/"),
    };
  }

  /**
   * At the end of a run the user's task folder holds the hidden assets again. A hidden asset is out
   * of the folder for the whole run, so whatever stands at its path now was put there by the agent
   * (a forged reference for the next run): it is replaced, and recorded as tampering.
   */
  returnHidden(): void {
    const { state, spec, folder, history } = this.#records;
    const hidden = state.pristine.files.filter((f) => f.hidden);
    if (hidden.length === 0) return;
    try {
      const report = restorePristine(
        spec.taskDir,
        folder.files.pristine,
        { files: hidden, folders: [] },
        true,
      );
      const byRel = new Map(hidden.map((f) => [f.rel, f]));
      for (const rel of report.removed) {
        history.append({
          type: "tampering",
          iteration: state.iteration,
          file: join(spec.taskDir, rel),
          problem:
            "a file the agent put at a hidden asset's path (the hidden asset replaced it at the end of the run)",
          expected: byRel.get(rel)?.sha256 ?? "the hidden asset",
          actual: "a file of the agent's",
        });
        this.onIntegrity({
          kind: "asset_tampering",
          role: WORK,
          call: null,
          attempted: `a file put at the hidden asset's path ${JSON.stringify(rel)}`,
          rule: "hidden assets are the runner's alone (trust.md rule 13)",
          action: "replaced by the hidden asset at the end of the run",
        });
      }
    } catch (error) {
      history.append({
        type: "limit",
        iteration: state.iteration,
        limit: "hidden_assets",
        detail: `could not put the hidden assets back into the task folder (copies are in ${folder.files.pristine}): ${messageOf(error)}`,
      });
    }
  }
}

/** SAM files and check assets, relative to the (real) task folder; hidden assets marked. */
function pristineRequests(sam: SamDocument, taskDir: string): PristineRequest[] {
  const samDir = dirname(sam.file);
  const rel = (file: string) => relative(taskDir, realpathSync(file)).split("\\").join("/");
  const hidden = new Set((sam.metadata.hiddenAssets ?? []).map((a) => rel(resolve(samDir, a))));
  return [
    ...sam.files.map((f) => ({ rel: rel(f.file), kind: "sam" as const, hidden: false })),
    ...sam.metadata.checkAssets.map((a) => {
      const path = rel(resolve(samDir, a));
      return { rel: path, kind: "asset" as const, hidden: hidden.has(path) };
    }),
  ];
}

/**
 * The notice put in front of every check's output. A link's name and target are the agent's: each
 * is one visible line (its line breaks and control characters escaped), so no name can add a line
 * that reads as the runner's (`scifi: ...`) to what the review reads.
 */
export function linksNoticeText(links: readonly { path: string; target: string; problem: string }[]): string {
  return `scifi: ${links.length} symlink(s) in the task folder point outside it or nowhere (they are not deliverables):\n${links
    .slice(0, 20)
    .map((l) => `  ${visible(l.path)} -> ${visible(l.target)} (${visible(l.problem)})`)
    .join("\n")}`;
}
