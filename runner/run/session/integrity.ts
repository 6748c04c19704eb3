// Integrity events (docs/integrity.md): every defence that refuses, undoes or overrides something an
// agent did writes one `integrity` event on the run's history through this recorder, within the
// run's quota for them (like the network records), and marks the tool call on the audit tape so
// `scifi audit show` can point at it. Which role and tool call: the session says (session.ts).
import { posix } from "node:path";
import type { HistoryEvent, IntegrityCall, IntegrityKind } from "../../memory/history-events.ts";
import { TASK_MOUNT } from "../../policy/spec.ts";
import type { PristineSet } from "../../run-folder/state.ts";
import type { PassEvent } from "./conversation.ts";

/** `integrity` events one run's history takes, and their bytes; past them one `overflow` event. */
export const RUN_INTEGRITY_QUOTA = { events: 2_000, bytes: 2 * 1024 * 1024 };

/** The audit tape's event name for an integrity event that came from a tool call. */
export const INTEGRITY_AUDIT_EVENT = "integrity";

/** What a defence says; role and call default to the session's current ones. */
export interface IntegrityInput {
  kind: IntegrityKind;
  attempted: string;
  rule: string;
  action: string;
  role?: string;
  /** The tool call; `null`: none, even while one runs (a check's, a job's). */
  call?: IntegrityCall | null;
}

export type IntegrityEvent = Extract<HistoryEvent, { type: "integrity" }>;

/** Agent text inside an event stays one quoted line of bounded length (trust.md rule 14). */
export function quoted(text: string, max = 300): string {
  const json = JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
  return json;
}

export class IntegrityRecorder {
  readonly #append: (event: IntegrityEvent) => void;
  readonly #quota: { events: number; bytes: number };
  #events: number;
  #bytes = 0;
  #full = false;

  /**
   * `already`: the integrity events the history holds from before a resume (a number: their count
   * only; the events: their count and bytes too, and full when one of them is the `overflow`), so
   * a resumed run has what is left of one quota, not a new one.
   */
  constructor(
    append: (event: IntegrityEvent) => void,
    already: number | readonly IntegrityEvent[] = 0,
    quota = RUN_INTEGRITY_QUOTA,
  ) {
    this.#append = append;
    this.#quota = quota;
    if (typeof already === "number") {
      this.#events = already;
    } else {
      this.#events = already.length;
      for (const event of already) {
        if (event.kind === "overflow") this.#full = true;
        else this.#bytes += JSON.stringify(event).length + 1;
      }
    }
    if (this.#events >= quota.events) this.#full = true;
  }

  get count(): number {
    return this.#events;
  }

  /** Appends the event within the quota; past it one `overflow` event, then nothing. False: dropped. */
  record(event: IntegrityEvent): boolean {
    if (this.#full) return false;
    const size = JSON.stringify(event).length + 1;
    if (this.#events < this.#quota.events && this.#bytes + size <= this.#quota.bytes) {
      this.#events++;
      this.#bytes += size;
      this.#append(event);
      return true;
    }
    this.#full = true;
    this.#events++;
    this.#append({
      type: "integrity",
      iteration: event.iteration,
      kind: "overflow",
      role: event.role,
      attempted: `more integrity events than the run's history takes (${this.#quota.events} events, ${this.#quota.bytes} bytes)`,
      rule: "the run's integrity-record quota",
      action: "later integrity events of this run are not recorded (their defences still act)",
    });
    return false;
  }
}

/** Lines of a refusal the kernel or the runner gives for a write under a read-only bind. */
const REFUSED_WRITE = /Read-only file system|read-only mount|Device or resource busy|EROFS|EBUSY/;
/**
 * A refused change of an asset's mode, owner or times only (`chmod +x checks/check.py` to run it):
 * not a write, and it cannot change what the check does; not counted (docs/integrity.md).
 */
const METADATA_ONLY =
  /changing permissions of|changing ownership of|changing group of|setting times of|cannot touch/;
/** A refused rename: a bound file cannot be renamed over (`sed -i`'s temporary file, `mv x checks/a`). */
const REFUSED_RENAME = /Device or resource busy|EBUSY/;

/**
 * A write, rename or removal of a SAM file or visible check asset refused in a tool result: the
 * protected paths (or asset folders) the refusal lines name, or empty. Only refusals (not a plain
 * mention of a path) count. What a line names is read as paths: each word of the line, normalised
 * against /task (`checks//check.py`, `./checks/../checks/check.py`, `/task/./checks/check.py` are
 * all `checks/check.py`). Counted besides (the command's cwd and links are not known here):
 * - a word whose last part is an asset's file name (`check.py`, `c/check.py`) when `command` names
 *   that asset's folder as a word (`cd checks && … > check.py`, `os.chdir('checks')`,
 *   `ln -s checks c && … > c/check.py`): a refusal of that name is the bind's;
 * - a refused rename (EBUSY) of a new file in an asset folder (`sed -i`'s `checks/sedXXXX`): an
 *   attempt on that folder, named by the folder.
 * `toolPath`: the file tool's own path, resolved as the sandbox resolves it (posix, against /task).
 */
export function refusedAssetWrites(
  output: string,
  pristine: PristineSet,
  toolPath?: string,
  command = "",
): string[] {
  const visible = pristine.files.filter((f) => !f.hidden).map((f) => f.rel);
  const rels = new Set(visible);
  const found = new Set<string>();
  for (const line of output.split("\n")) {
    if (!REFUSED_WRITE.test(line) || METADATA_ONLY.test(line)) continue;
    if (toolPath !== undefined) {
      const rel = relToTask(toolPath);
      if (rel !== undefined && rels.has(rel)) found.add(rel);
    }
    const words = pathWords(line);
    const hits = new Set<string>();
    for (const word of words) {
      const rel = relToTask(word);
      if (rel !== undefined && rels.has(rel)) hits.add(rel);
    }
    for (const word of words) {
      const name = posix.basename(word);
      for (const rel of visible) {
        const dir = posix.dirname(rel);
        if (dir !== "." && posix.basename(rel) === name && namesFolder(command, dir)) hits.add(rel);
      }
    }
    if (hits.size === 0 && REFUSED_RENAME.test(line)) {
      for (const word of words) {
        const rel = relToTask(word);
        if (rel === undefined) continue;
        const dir = posix.dirname(rel);
        if (pristine.folders.includes(dir) && !rels.has(rel)) hits.add(dir);
      }
    }
    for (const hit of hits) found.add(hit);
  }
  return [...found];
}

/** The words of a line that could be paths: split at blanks and quotes, without a trailing `:`/`,`. */
function pathWords(line: string): string[] {
  const words: string[] = [];
  for (const raw of line.split(/[\s'"`‘’]+/)) {
    const word = raw.replace(/[:,;)]+$/, "").replace(/^\(+/, "");
    if (word !== "" && /^[A-Za-z0-9._/+@~-]+$/.test(word)) words.push(word);
  }
  return words;
}

/** Whether `command` names the folder `dir` (relative to /task) as a whole word. */
function namesFolder(command: string, dir: string): boolean {
  const escaped = dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|[^A-Za-z0-9._-])(/task/|\\./)?${escaped}/?($|[^A-Za-z0-9._-])`).test(command);
}

/** A path as the sandbox resolves it (against /task), relative to /task; undefined: outside it. */
export function relToTask(path: string): string | undefined {
  const absolute = posix.resolve(TASK_MOUNT, path);
  return absolute.startsWith(`${TASK_MOUNT}/`) ? absolute.slice(TASK_MOUNT.length + 1) : undefined;
}

/**
 * The per-tool-call part of the recording (all of it that runs when no defence acts): the call
 * that runs now, named from the tape's head when it starts, and its own result scanned for the
 * refusals it shows when it ends. The session feeds it every pass event; `npm run bench loop`
 * measures a pass with it against the same pass without it.
 */
export class ToolCallIntegrity {
  readonly #head: () => number;
  readonly #pristine: () => PristineSet;
  readonly #record: (input: IntegrityInput) => void;
  readonly #iteration: () => number;
  #current: { role: string; call: IntegrityCall } | undefined;
  /** Bash calls whose command may leave a process running (`&`, nohup, setsid…). */
  readonly #background: { role: string; iteration: number; call: IntegrityCall }[] = [];

  /**
   * `head`: the tape's last sequence number; `record`: the session's recorder (it reads `current`);
   * `iteration`: the run's iteration now (each has its own sandboxes, so its own processes).
   */
  constructor(
    head: () => number,
    pristine: () => PristineSet,
    record: (input: IntegrityInput) => void,
    iteration: () => number = () => 0,
  ) {
    this.#head = head;
    this.#pristine = pristine;
    this.#record = record;
    this.#iteration = iteration;
  }

  /** The tool call running now, and the role that made it; undefined between calls. */
  get current(): { role: string; call: IntegrityCall } | undefined {
    return this.#current;
  }

  /**
   * Earlier calls of the running call's agent (this iteration) that may have left a process running:
   * what the sandbox's processes do now (a connection) may be theirs, not the running call's.
   */
  earlierBackground(): IntegrityCall[] {
    const current = this.#current;
    if (!current) return [];
    return this.#background
      .filter(
        (b) => b.role === current.role && b.iteration === this.#iteration() && b.call.id !== current.call.id,
      )
      .map((b) => b.call);
  }

  onPassEvent(event: PassEvent): void {
    if (event.type === "tool_start") {
      this.#current = { role: event.role, call: { seq: this.#head(), id: event.id, tool: event.name } };
    } else if (event.type === "tool") {
      try {
        if (!event.rejected)
          for (const input of toolResultIntegrity(event, this.#pristine())) this.#record(input);
        if (this.#current && event.name === "bash" && mayLeaveProcess(commandOf(event.input)))
          this.#background.push({ ...this.#current, iteration: this.#iteration() });
      } finally {
        this.#current = undefined;
      }
    }
  }
}

/** Refusals a tool call's own result shows: the allowlist's, a write to a protected file. */
export function toolResultIntegrity(
  event: Extract<PassEvent, { type: "tool" }>,
  pristine: PristineSet,
): IntegrityInput[] {
  const found: IntegrityInput[] = [];
  if (event.refused) {
    found.push({
      kind: "allowlist_refused",
      attempted: `${event.name} ${quoted(commandOf(event.input))}`,
      rule: event.refused.rule,
      action: `refused before it ran: ${event.refused.detail}`,
    });
  }
  // A refusal inside a command that went on (`a > checks/x; b`) counts too: no `ok` test.
  if (event.output === undefined) return found;
  const hit = refusedAssetWrites(event.output, pristine, pathOf(event.input), commandOf(event.input));
  if (hit.length > 0)
    found.push({
      kind: "asset_write",
      attempted: `${event.name} wrote, moved or removed ${hit.join(", ")}: ${quoted(commandOf(event.input))}`,
      rule: "SAM files and check assets are read-only to agents (bound read-only)",
      action: "the sandbox refused it; the runner's copies are put back before the checks",
    });
  return found;
}

/** The command or path of a tool call's input, for an integrity record. */
function commandOf(input: unknown): string {
  if (typeof input !== "object" || input === null) return "";
  const i = input as Record<string, unknown>;
  const value = i.command ?? i.path ?? i.pattern;
  return typeof value === "string" ? value : JSON.stringify(input);
}

/**
 * Whether a command may leave a process running after it returns: a `&` that is not `&&`, or a
 * program that detaches one. A program that detaches itself (a script's fork) is not seen here:
 * its later connections are named on the call running then (docs/integrity.md).
 */
export function mayLeaveProcess(command: string): boolean {
  return (
    /(^|[^&>])&(?![&>])/.test(command.replace(/[0-9]?>&[0-9-]?|&>>?/g, " ")) ||
    /\b(nohup|setsid|disown|daemon|start-stop-daemon|tmux)\b|Popen|start_new_session|os\.fork|spawn\(/.test(
      command,
    )
  );
}

function pathOf(input: unknown): string | undefined {
  const path = typeof input === "object" && input !== null ? (input as { path?: unknown }).path : undefined;
  return typeof path === "string" ? path : undefined;
}
