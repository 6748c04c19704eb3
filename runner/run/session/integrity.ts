// Integrity events (docs/integrity.md): every defence that refuses, undoes or overrides something an
// agent did writes one `integrity` event on the run's history through this recorder, within the
// run's quota for them (like the network records), and marks the tool call on the audit tape so
// `scifi audit show` can point at it. Which role and tool call: the session says (session.ts).
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

  /** `already`: integrity events the history holds from before a resume. */
  constructor(append: (event: IntegrityEvent) => void, already = 0, quota = RUN_INTEGRITY_QUOTA) {
    this.#append = append;
    this.#quota = quota;
    this.#events = already;
    this.#full = already >= quota.events;
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
 * A write, rename or removal of a SAM file or visible check asset refused in a tool result: the
 * protected paths the refusal lines name, or empty. Only refusals (not a plain mention of a path)
 * count; the path must be one of the run's, relative or under /task.
 */
export function refusedAssetWrites(output: string, pristine: PristineSet, toolPath?: string): string[] {
  const rels = pristine.files.filter((f) => !f.hidden).map((f) => f.rel);
  const found = new Set<string>();
  for (const line of output.split("\n")) {
    if (!REFUSED_WRITE.test(line)) continue;
    for (const rel of rels) if (names(line, rel)) found.add(rel);
    if (toolPath !== undefined) {
      const rel = relToTask(toolPath);
      if (rels.includes(rel)) found.add(rel);
    }
  }
  return [...found];
}

/** Whether `line` names `rel` as a whole path (relative, ./rel or /task/rel). */
function names(line: string, rel: string): boolean {
  let from = 0;
  for (;;) {
    const at = line.indexOf(rel, from);
    if (at < 0) return false;
    const before = line.slice(0, at);
    const after = line[at + rel.length] ?? "";
    const startOk = /(^|[\s'"`‘(=:]|\/task\/|\s\.\/|^\.\/|['"`‘]\.\/)$/.test(before);
    if (startOk && !/[A-Za-z0-9._/-]/.test(after)) return true;
    from = at + 1;
  }
}

function relToTask(path: string): string {
  const p = path.startsWith(`${TASK_MOUNT}/`) ? path.slice(TASK_MOUNT.length + 1) : path;
  return p.replace(/^(\.\/)+/, "");
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
  #current: { role: string; call: IntegrityCall } | undefined;

  /** `head`: the tape's last sequence number; `record`: the session's recorder (it reads `current`). */
  constructor(head: () => number, pristine: () => PristineSet, record: (input: IntegrityInput) => void) {
    this.#head = head;
    this.#pristine = pristine;
    this.#record = record;
  }

  /** The tool call running now, and the role that made it; undefined between calls. */
  get current(): { role: string; call: IntegrityCall } | undefined {
    return this.#current;
  }

  onPassEvent(event: PassEvent): void {
    if (event.type === "tool_start") {
      this.#current = { role: event.role, call: { seq: this.#head(), id: event.id, tool: event.name } };
    } else if (event.type === "tool") {
      try {
        if (!event.rejected)
          for (const input of toolResultIntegrity(event, this.#pristine())) this.#record(input);
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
  const hit = refusedAssetWrites(event.output, pristine, pathOf(event.input));
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

function pathOf(input: unknown): string | undefined {
  const path = typeof input === "object" && input !== null ? (input as { path?: unknown }).path : undefined;
  return typeof path === "string" ? path : undefined;
}
