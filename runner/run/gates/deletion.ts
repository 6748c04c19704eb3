// `approval: [delete]`: destroying the data of a file that existed when the run started (removing
// it, truncating it, or rewriting it at any size: anything after which its start content is no
// longer there as it was) needs a person's yes. An agent with bash can delete anything in its task folder, and nothing host-side can
// intercept a syscall in the sandbox, so the runner keeps its own copy of every file of the task folder
// (taken before the agent's first call, in the run folder, out of the agent's reach) and compares after
// every tool call of the work pass: a file from the start that is now missing, no longer a regular
// file, shorter, or whose start content is no longer its first bytes is put back at once from the copy (through the sandbox's own writer, so the restore
// can reach nothing the agent could not), and one approval request is made for what that call
// removed. Approved: the runner itself deletes / truncates (to the agent's content) and the agent is
// told; denied: the files stay and the agent reads the reason. Files made during the run are the
// agent's own and are not watched; an append (the start content still the file's first bytes)
// destroys nothing and is not asked. A file whose size, inode, mtime and ctime are as last verified
// is not read again (ctime cannot be set from user space), so the check stays cheap. A write through
// a shared mapping changes no time while its pages stay writable, so before a file is verified its
// dirty pages are written back (fdatasync write-protects the mapping: the next write through it
// faults and moves ctime); a ctime too close to the verification to be told apart from a later
// write, and every file on a filesystem with no writeback (tmpfs), is read again every time.
import { lstatSync, mkdirSync, readFileSync, rmSync, type Stats, statfsSync, writeFileSync } from "node:fs";
import { join, posix } from "node:path";
import { type ApprovalGate, ApprovalTimedOut } from "../../approval/gate.ts";
import { writeFileAtomic } from "../../atomic-write.ts";
import { giveToOwner, lstatOrUndefined, readTaskFile } from "../../policy/host-paths.ts";
import { TASK_MOUNT } from "../../policy/spec.ts";
import type { Sandbox } from "../../sandbox/types.ts";
import { sha256 } from "../../sha256.ts";
import { shellQuote } from "../../terminal-text.ts";
import {
  DeleteGuardCannotWatch,
  DeleteGuardTooLarge,
  diffSummary,
  fingerprint,
  flushPages,
  RACY_MS,
  regularFiles,
  statInTask,
  TMPFS_MAGIC,
} from "./deletion-files.ts";

export { DeleteGuardCannotWatch, DeleteGuardTooLarge, diffSummary };

/** Default cap on what the runner copies at start (all files together). */
export const DEFAULT_DELETE_GUARD_BYTES = 2 * 1024 ** 3;
/** Files of one find asked one request each; more than this at once are one request together. */
export const MAX_FILE_REQUESTS = 20;

export interface GuardedFile {
  /** Path relative to the task folder, `/`-separated. */
  rel: string;
  size: number;
  sha256: string;
  ino: number;
  mode: number;
  /** Name of the runner's copy under `<dir>/files/`. */
  copy: string;
}

interface GuardIndex {
  version: 1;
  files: GuardedFile[];
  next: number;
}

export type RemovalKind = "deleted" | "truncated" | "rewritten";

/** The verb of a request's summary and the participle of what the runner did, per kind. */
const VERB: Record<RemovalKind, [string, string]> = {
  deleted: ["delete", "deleted"],
  truncated: ["truncate", "truncated"],
  rewritten: ["rewrite", "rewrote"],
};

export interface Removal {
  file: GuardedFile;
  kind: RemovalKind;
  /** Truncated or rewritten: the agent's content, kept so an approval can put it in place. */
  agentContent?: Buffer;
  /** What was found, for the request and the agent. */
  found: string;
}

export interface DeletionGuardOptions {
  taskDir: string;
  /** A folder of the run folder (no sandbox mounts it): the index and the copies. */
  dir: string;
  gate: ApprovalGate;
  maxBytes?: number;
  /**
   * Removals a person did not approve (denied, timed out): undone for good. `when` is the
   * afterPass text (undefined: the last tool call); the run records them (integrity events).
   */
  onUndone?: (removals: readonly Removal[], when: string | undefined) => void;
}

export class DeletionGuard {
  readonly #o: DeletionGuardOptions;
  #index: GuardIndex;
  /** Per file, the stat fingerprint at which its start content was last verified intact. */
  readonly #verified = new Map<string, string>();
  /** Whether the task folder's filesystem writes pages back (tmpfs does not: no fingerprint holds). */
  #writesBack: boolean | undefined;

  private constructor(options: DeletionGuardOptions, index: GuardIndex) {
    this.#o = options;
    this.#index = index;
  }

  /**
   * The guard of a run: its index from the run folder, or (first time) a copy of every regular file of
   * the task folder, read without following links. Throws DeleteGuardTooLarge past the byte cap: a
   * deletion that could not be undone would make the key a no-op (trust.md rule 7).
   */
  static open(options: DeletionGuardOptions): DeletionGuard {
    const indexFile = join(options.dir, "index.json");
    try {
      return new DeletionGuard(options, JSON.parse(readFileSync(indexFile, "utf8")) as GuardIndex);
    } catch {
      // First time: capture below.
    }
    mkdirSync(join(options.dir, "files"), { recursive: true, mode: 0o700 });
    const cap = options.maxBytes ?? DEFAULT_DELETE_GUARD_BYTES;
    const index: GuardIndex = { version: 1, files: [], next: 0 };
    let total = 0;
    for (const rel of regularFiles(options.taskDir)) {
      const stat = lstatSync(join(options.taskDir, rel));
      total += stat.size;
      if (total > cap) {
        throw new DeleteGuardTooLarge(
          `approval: [delete] needs the runner's copy of every file of the task folder, and they hold more than ${cap} bytes (the cap); protect large data with a read-only mount instead (docs/approval.md)`,
        );
      }
      const data = readTaskFile(options.taskDir, rel, rel, cap);
      const copy = String(index.next++);
      writeFileSync(join(options.dir, "files", copy), data, { mode: 0o600 });
      index.files.push({
        rel,
        size: data.length,
        sha256: sha256(data),
        ino: stat.ino,
        mode: stat.mode & 0o777,
        copy,
      });
    }
    const guard = new DeletionGuard(options, index);
    guard.#save();
    for (const file of index.files) {
      const stat = lstatOrUndefined(join(options.taskDir, file.rel));
      if (stat) guard.#verified.set(file.rel, fingerprint(stat));
    }
    return guard;
  }

  get files(): readonly GuardedFile[] {
    return this.#index.files;
  }

  /** Files from the start that are now missing (or not a regular file), shorter, or rewritten. */
  removals(): Removal[] {
    const found: Removal[] = [];
    const dirs = new Map<string, boolean>();
    for (const file of this.#index.files) {
      const stat = statInTask(this.#o.taskDir, file.rel, dirs);
      if (!stat) found.push({ file, kind: "deleted", found: "missing" });
      else if (!stat.isFile())
        found.push({ file, kind: "deleted", found: "replaced by something that is not a regular file" });
      else if (stat.size < file.size) {
        const agentContent = this.#readAgent(file);
        found.push({
          file,
          kind: "truncated",
          found: `${file.size} -> ${stat.size} bytes${agentContent ? `; ${diffSummary(this.#start(file), agentContent)}` : ""}`,
          ...(agentContent ? { agentContent } : {}),
        });
      } else if (this.#verified.get(file.rel) !== fingerprint(stat)) {
        // Written back first, then stat'ed, then read: a write after the flush moves ctime.
        flushPages(join(this.#o.taskDir, file.rel));
        const settled = statInTask(this.#o.taskDir, file.rel, dirs);
        const agentContent = this.#readAgent(file);
        if (agentContent === undefined) {
          found.push({ file, kind: "rewritten", found: `${file.size} -> ${stat.size} bytes, unreadable` });
          continue;
        }
        // An append keeps the start content as the first bytes: nothing destroyed.
        if (sha256(agentContent.subarray(0, file.size)) === file.sha256) {
          if (settled && this.#fingerprintHolds(settled)) this.#verified.set(file.rel, fingerprint(settled));
          else this.#verified.delete(file.rel);
          continue;
        }
        found.push({
          file,
          kind: "rewritten",
          found: `rewritten, ${file.size} -> ${agentContent.length} bytes; ${diffSummary(this.#start(file), agentContent)}`,
          agentContent,
        });
      }
    }
    return found;
  }

  /**
   * Whether a later equal fingerprint proves the file unchanged: not on a filesystem without
   * writeback (a mapped write there never moves a time), and not when ctime is within RACY_MS of
   * now (a write in the same clock tick could leave the same ctime: the "racy git" problem).
   */
  #fingerprintHolds(stat: Stats): boolean {
    if (this.#writesBack === undefined) {
      try {
        this.#writesBack = statfsSync(this.#o.taskDir).type !== TMPFS_MAGIC;
      } catch {
        this.#writesBack = false;
      }
    }
    return this.#writesBack && Date.now() - stat.ctimeMs > RACY_MS;
  }

  #readAgent(file: GuardedFile): Buffer | undefined {
    try {
      const cap = this.#o.maxBytes ?? DEFAULT_DELETE_GUARD_BYTES;
      return readTaskFile(this.#o.taskDir, file.rel, file.rel, cap);
    } catch {
      return undefined;
    }
  }

  #start(file: GuardedFile): Buffer {
    return readFileSync(join(this.#o.dir, "files", file.copy));
  }

  /**
   * The requests for one find: one per file (its own summary and diff), up to MAX_FILE_REQUESTS;
   * past that one request for all of them (a `rm -r` of a big folder is one decision, not hundreds).
   * `ask` files and waits for each; returns each removal with whether a person approved it.
   */
  async #askEach(
    removals: Removal[],
    when: string | undefined,
    noted: (r: Removal) => string,
    beforeWait?: () => Promise<void>,
  ): Promise<{ removal: Removal; approved: boolean; id: string; who: string; note?: string }[]> {
    // A file name is the agent's: shell-quoted, so a newline in one cannot fake a line of the detail.
    const lineOf = (r: Removal) => `${shellQuote(r.file.rel)}: ${r.kind} (${r.found})${noted(r)}`;
    const head = when
      ? `A file that existed when the run started was removed, truncated or rewritten ${when}.`
      : "The agent's last tool call removed, truncated or rewrote a file that existed when the run started.";
    const tail =
      "The runner put it back from its copy; approving lets the runner delete it / put the new content in place:";
    const groups: Removal[][] = removals.length <= MAX_FILE_REQUESTS ? removals.map((r) => [r]) : [removals];
    const answers: { removal: Removal; approved: boolean; id: string; who: string; note?: string }[] = [];
    for (const group of groups) {
      const one = group.length === 1 ? group[0] : undefined;
      const summary = one
        ? `${VERB[one.kind][0]} ${shellQuote(one.file.rel)}${when ? `, ${when}` : ""}`
        : `delete or rewrite ${group.length} files that existed at run start${when ? `, ${when}` : ""} (more than ${MAX_FILE_REQUESTS} at once: one request)`;
      const answer = await this.#o.gate
        .ask(
          {
            action: "delete",
            summary,
            detail: [head, tail, ...group.map(lineOf)].join("\n"),
            facts: { files: group.map((r) => r.file.rel).join("\n") },
          },
          beforeWait ? { beforeWait } : {},
        )
        .catch((error: unknown) => {
          // Nobody decided before the deadline (the run ends blocked): every removal not approved,
          // this one and those not asked yet, was put back and stays so, and is reported as undone.
          if (error instanceof ApprovalTimedOut) {
            const approved = new Set(answers.filter((a) => a.approved).map((a) => a.removal));
            const undone = removals.filter((r) => !approved.has(r));
            if (undone.length > 0) this.#o.onUndone?.(undone, when);
          }
          throw error;
        });
      const d = answer.decision;
      for (const removal of group)
        answers.push({
          removal,
          approved: answer.approved,
          id: answer.request.id,
          who: d.who,
          ...(d.note ? { note: d.note } : {}),
        });
    }
    const undone = answers.filter((a) => !a.approved).map((a) => a.removal);
    if (undone.length > 0) this.#o.onUndone?.(undone, when);
    return answers;
  }

  /**
   * After a tool call: undoes what the call removed and asks a person (one request a file).
   * Returns the text the agent reads after the tool's own result, or undefined when nothing from
   * the start was removed.
   */
  async afterTool(sandbox: Sandbox): Promise<string | undefined> {
    const removals = this.removals();
    if (removals.length === 0) return undefined;
    const failed = new Map<Removal, string>();
    for (const r of removals) {
      await this.#restore(sandbox, r).catch((error: unknown) => {
        // Never silent: the request and the agent say it, and the person decides knowing it.
        failed.set(r, error instanceof Error ? error.message : String(error));
      });
    }
    const noted = (r: Removal) => (failed.has(r) ? `; NOT put back: ${failed.get(r)}` : "");
    let suspended = false;
    const answers = await this.#askEach(removals, undefined, noted, async () => {
      if (suspended) return;
      suspended = true;
      await sandbox.suspend?.();
    });
    if (suspended) await sandbox.resume?.();
    const lines = removals.map((r) => `${r.file.rel}: ${r.kind} (${r.found})${noted(r)}`);
    const said: string[] = [];
    for (const a of answers) {
      if (a.approved) {
        await this.#apply(sandbox, a.removal);
        said.push(
          `${a.removal.file.rel}: a person approved it (${a.who}${a.note ? `: ${a.note}` : ""}; request ${a.id}); the runner has now ${VERB[a.removal.kind][1]} it.`,
        );
      } else {
        said.push(
          `${a.removal.file.rel}: a person denied it (${a.who}): ${a.note ?? "no reason given"} (request ${a.id}); it stays as it was at the start, take another way.`,
        );
      }
    }
    const restarted = suspended
      ? " While waiting the sandbox was stopped and a fresh one started: /tmp and background processes are gone."
      : "";
    return `The runner: this call removed, truncated or rewrote files that existed when the run started (${lines.join("; ")}). They were put back from the runner's copy at once; destroying them needs a person's approval. ${said.join(" ")}${restarted}`;
  }

  /**
   * After the work pass, its sandbox stopped (no process of the agent is left to race this), or
   * after the agent's jobs ended: a removal made after the agent's last tool call is undone
   * host-side and asked like the others (one request a file); the agent is not told (its pass is
   * over). Returns "denied" when a person denied any of them.
   */
  async afterPass(when = "after the agent's last tool call"): Promise<"none" | "approved" | "denied"> {
    const removals = this.removals();
    if (removals.length === 0) return "none";
    for (const r of removals) this.#restoreHost(r);
    const answers = await this.#askEach(removals, when, () => "");
    for (const a of answers) {
      if (!a.approved) continue;
      const r = a.removal;
      const target = join(this.#o.taskDir, r.file.rel);
      if (r.kind === "deleted") {
        rmSync(target, { force: true, recursive: true });
        this.#index.files = this.#index.files.filter((f) => f !== r.file);
      } else {
        const content = r.agentContent ?? Buffer.alloc(0);
        this.#writeHost(r.file, content);
        const copy = String(this.#index.next++);
        writeFileSync(join(this.#o.dir, "files", copy), content, { mode: 0o600 });
        Object.assign(r.file, { size: content.length, sha256: sha256(content), copy });
      }
    }
    this.#save();
    return answers.every((a) => a.approved) ? "approved" : "denied";
  }

  /** Host-side restore, only while no sandbox of the run is alive: folders on the way made real. */
  #restoreHost(r: Removal): void {
    this.#writeHost(r.file, readFileSync(join(this.#o.dir, "files", r.file.copy)));
  }

  #writeHost(file: GuardedFile, data: Buffer): void {
    const owner = lstatSync(this.#o.taskDir);
    let current = this.#o.taskDir;
    for (const part of file.rel.split("/").slice(0, -1)) {
      current = join(current, part);
      const stat = lstatOrUndefined(current);
      if (stat?.isDirectory()) continue;
      if (stat) rmSync(current, { force: true, recursive: true });
      mkdirSync(current, { mode: 0o755 });
      giveToOwner(current, owner);
    }
    const target = join(this.#o.taskDir, file.rel);
    rmSync(target, { force: true, recursive: true });
    writeFileSync(target, data, { mode: file.mode, flag: "wx" });
    giveToOwner(target, owner);
  }

  async #restore(sandbox: Sandbox, r: Removal): Promise<void> {
    const path = `${TASK_MOUNT}/${r.file.rel}`;
    const parent = posix.dirname(path);
    if (r.kind === "deleted") {
      // Whatever now stands at the path (a folder, a link, a FIFO) goes, and so does a link or a
      // non-folder where a folder on the way was; a missing folder comes back. It runs as the sandbox
      // user inside the sandbox: it reaches nothing the agent could not.
      const script = [
        `t="$1"; pa="$2"; p=${TASK_MOUNT}; shift 2; for c in "$@"; do p="$p/$c";`,
        'if [ -L "$p" ] || { [ -e "$p" ] && [ ! -d "$p" ]; }; then rm -rf -- "$p"; fi; done;',
        'rm -rf -- "$t"; mkdir -p -- "$pa"',
      ].join(" ");
      const parts = r.file.rel.split("/").slice(0, -1);
      await sandbox.exec(["sh", "-c", script, "sh", path, parent, ...parts], { timeoutMs: 60_000 });
    }
    await sandbox.writeFile(path, readFileSync(join(this.#o.dir, "files", r.file.copy)));
    await sandbox.exec(["chmod", r.file.mode.toString(8), path], { timeoutMs: 30_000 });
  }

  async #apply(sandbox: Sandbox, r: Removal): Promise<void> {
    const path = `${TASK_MOUNT}/${r.file.rel}`;
    if (r.kind === "deleted") {
      await sandbox.exec(["rm", "-f", "--", path], { timeoutMs: 60_000 });
      this.#index.files = this.#index.files.filter((f) => f !== r.file);
    } else {
      const content = r.agentContent ?? Buffer.alloc(0);
      await sandbox.writeFile(path, content);
      const copy = String(this.#index.next++);
      writeFileSync(join(this.#o.dir, "files", copy), content, { mode: 0o600 });
      Object.assign(r.file, { size: content.length, sha256: sha256(content), copy });
    }
    this.#save();
  }

  #save(): void {
    writeFileAtomic(join(this.#o.dir, "index.json"), JSON.stringify(this.#index), { mode: 0o600 });
  }
}
