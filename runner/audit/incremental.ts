// Incremental storage of call requests on the tape. A call record stores only what is new since an
// earlier call: an array (request messages and tools, every array member of the wire body) may be
// written as `{ "$from": seq, "count": n, "add": [...] }`, meaning "the first n items of the same
// array of the call at seq, then these"; a system prompt that repeats as `{ "$same": seq }`.
// Without this a record held the whole history, so tapes grew quadratically with its length.
//
// The writer (AuditTape) remembers each call's values as the caller sent them; a reference to them
// means "what was written for those values", which a reader (readTape, verifyTape, through the
// TapeExpander) reconstructs, redacted as they were written. Redaction works on each string's
// decoded text alone and never crosses its quotes (redact.ts), so equal values are written equally
// wherever they stand, and a reference never differs from writing the value again. In the new items of a wire
// array, a long text that is also in the call's own request is written as `{"$s": path}` (a path
// into that request), since the wire body repeats the request's texts in the provider's shape.
// References point only backwards to call records; the hash chain covers the lines they point to.
import { isFrozenDeep } from "../frozen.ts";
import type { CallRecord, StoredCallRecord, TapeRequest } from "./types.ts";

/** "The first `count` items of the same array in the call at `$from`, then `add`." */
export interface ArrayRef {
  $from: number;
  count: number;
  add: unknown[];
}

/** "The same value as the same field of the call at `$same`." */
export interface SameRef {
  $same: number;
}

/** A reference that cannot be resolved: the tape is damaged or was edited. */
export class TapeReferenceError extends Error {
  override name = "TapeReferenceError";
}

type Json = Record<string, unknown>;

interface Expanded {
  request: TapeRequest;
  wire: unknown;
}

/** Resolves stored (incremental) call records into full ones, in tape order. */
export class TapeExpander {
  readonly #calls = new Map<number, Expanded>();
  /** Writer side: how many recent calls to keep (older ones are never referenced). */
  readonly #keep: number | undefined;

  constructor(options: { keep?: number } = {}) {
    this.#keep = options.keep;
  }

  /** The full request and wire of a stored call; throws TapeReferenceError on a bad reference. */
  expand(record: StoredCallRecord): CallRecord {
    const seq = record.seq;
    const request = record.request as unknown as Json;
    const full: TapeRequest = {
      ...(request as unknown as TapeRequest),
      system: this.#string(request.system, seq, "request.system", (e) => e.request.system),
      messages: this.#array(request.messages, seq, "request.messages", (e) => e.request.messages),
    } as TapeRequest;
    if (request.tools !== undefined)
      full.tools = this.#array(
        request.tools,
        seq,
        "request.tools",
        (e) => e.request.tools,
      ) as TapeRequest["tools"];
    const wire = this.#wire(record.wire, seq, full);
    this.#remember(seq, { request: full, wire });
    return { ...record, request: full, ...(record.wire !== undefined ? { wire } : {}) } as CallRecord;
  }

  /**
   * Writer side: remembers a call by the values the caller sent (deeply frozen, see
   * runner/frozen.ts), so the next call's shared prefix is found by identity.
   */
  remember(seq: number, request: TapeRequest, wire: unknown): void {
    this.#remember(seq, { request, wire });
  }

  /** Recent calls, newest first (the writer looks for references among them). */
  recent(): { seq: number; request: TapeRequest; wire: unknown }[] {
    return [...this.#calls].reverse().map(([seq, e]) => ({ seq, ...e }));
  }

  #remember(seq: number, expanded: Expanded): void {
    this.#calls.set(seq, expanded);
    if (this.#keep === undefined) return;
    for (const old of this.#calls.keys()) {
      if (this.#calls.size <= this.#keep) break;
      this.#calls.delete(old);
    }
  }

  #wire(wire: unknown, seq: number, request: TapeRequest): unknown {
    if (!isObject(wire)) return wire;
    const out: Json = {};
    for (const [key, value] of Object.entries(wire)) {
      if (Array.isArray(value)) out[key] = value.map((item) => resolveStrings(item, request, `wire.${key}`));
      else if (isArrayRef(value)) {
        const add = value.add.map((item) => resolveStrings(item, request, `wire.${key}`));
        out[key] = this.#array({ ...value, add }, seq, `wire.${key}`, (e) => wireField(e.wire, key));
      } else out[key] = value;
    }
    return out;
  }

  #string(value: unknown, seq: number, field: string, pick: (e: Expanded) => unknown): string {
    if (typeof value === "string") return value;
    if (!isSameRef(value))
      throw new TapeReferenceError(`${field} is neither a text nor a {"$same": seq} reference`);
    const found = pick(this.#target(value.$same, seq, field));
    if (typeof found !== "string")
      throw new TapeReferenceError(`${field} refers to seq ${value.$same}, which has no ${field}`);
    return found;
  }

  #array(value: unknown, seq: number, field: string, pick: (e: Expanded) => unknown): unknown[] {
    if (Array.isArray(value)) return value;
    if (!isArrayRef(value))
      throw new TapeReferenceError(`${field} is neither a list nor a {"$from", "count", "add"} reference`);
    const base = pick(this.#target(value.$from, seq, field));
    if (!Array.isArray(base))
      throw new TapeReferenceError(`${field} refers to seq ${value.$from}, which has no ${field}`);
    if (value.count > base.length)
      throw new TapeReferenceError(
        `${field} takes ${value.count} items from seq ${value.$from}, which has only ${base.length}`,
      );
    return [...base.slice(0, value.count), ...value.add];
  }

  #target(target: number, seq: number, field: string): Expanded {
    if (!Number.isInteger(target) || target >= seq)
      throw new TapeReferenceError(
        `${field} refers to seq ${target}, which is not before this record (seq ${seq})`,
      );
    const found = this.#calls.get(target);
    if (!found)
      throw new TapeReferenceError(`${field} refers to seq ${target}, which is not a call on this tape`);
    return found;
  }
}

/**
 * Writer side: the stored form of a call's request and wire, referencing the recent calls the
 * writer remembers (as the caller sent them, see AuditTape). Values are compared structurally, and
 * by identity first: sent history is frozen, so the same object is the same value.
 */
export function compactCall(
  request: TapeRequest,
  wire: unknown,
  recent: ReturnType<TapeExpander["recent"]>,
): { request: Json; wire: unknown } {
  const stored: Json = { ...request };
  const sameSystem = recent.find((r) => r.request.system === request.system);
  if (sameSystem) stored.system = { $same: sameSystem.seq } satisfies SameRef;
  stored.messages = arrayRef(request.messages, recent, (r) => r.request.messages);
  if (request.tools) stored.tools = arrayRef(request.tools, recent, (r) => r.request.tools);
  if (!isObject(wire)) return { request: stored, wire };
  const strings = stringFinder(request);
  const storedWire: Json = {};
  for (const [key, value] of Object.entries(wire))
    storedWire[key] = Array.isArray(value)
      ? withStringRefs(
          arrayRef(value, recent, (r) => wireField(r.wire, key)),
          strings,
        )
      : value;
  return { request: stored, wire: storedWire };
}

/** Strings at least this long in a wire body's new items are written as a path into the request. */
const LONG_STRING = 256;

type Path = (string | number)[];

/**
 * Finds where a long string of a wire body sits in the call's request: the system prompt, then the
 * messages from the newest (the new wire items repeat recent messages), then the tool specs. Each
 * frozen message is walked once and its long strings kept, so a lookup costs a few map reads.
 */
function stringFinder(request: TapeRequest): (text: string) => Path | undefined {
  return (text) => {
    if (request.system === text) return ["system"];
    for (let i = request.messages.length - 1; i >= 0; i--) {
      const path = longStringsOf(request.messages[i]).get(text);
      if (path) return ["messages", i, ...path];
    }
    const tools = request.tools ?? [];
    for (let i = 0; i < tools.length; i++) {
      const path = longStringsOf(tools[i]).get(text);
      if (path) return ["tools", i, ...path];
    }
    return undefined;
  };
}

const longStringCache = new WeakMap<object, Map<string, Path>>();

/** The long strings inside one value, each with its first path relative to the value. */
function longStringsOf(value: unknown): Map<string, Path> {
  if (typeof value !== "object" || value === null) return new Map();
  const cached = longStringCache.get(value);
  if (cached) return cached;
  const found = new Map<string, Path>();
  // One path stack, copied only for a hit.
  const path: Path = [];
  const visit = (member: unknown): void => {
    if (typeof member === "string") {
      if (member.length >= LONG_STRING && !found.has(member)) found.set(member, [...path]);
    } else if (Array.isArray(member)) {
      for (let i = 0; i < member.length; i++) {
        path.push(i);
        visit(member[i]);
        path.pop();
      }
    } else if (isObject(member)) {
      for (const key in member) {
        path.push(key);
        visit(member[key]);
        path.pop();
      }
    }
  };
  visit(value);
  if (isFrozenDeep(value)) longStringCache.set(value, found);
  return found;
}

/**
 * A wire body repeats the request's texts (tool outputs, the system prompt) in its own shape; its
 * new items store each long one as `{"$s": path}` into this call's request instead of a copy.
 */
function withStringRefs(
  stored: unknown[] | ArrayRef,
  find: (text: string) => Path | undefined,
): unknown[] | ArrayRef {
  const replace = (value: unknown): unknown => {
    if (typeof value === "string") {
      const path = value.length >= LONG_STRING ? find(value) : undefined;
      return path ? { $s: path } : value;
    }
    if (Array.isArray(value)) return value.map(replace);
    if (!isObject(value)) return value;
    const out: Json = {};
    for (const key in value) out[key] = replace(value[key]);
    return out;
  };
  return Array.isArray(stored) ? stored.map(replace) : { ...stored, add: stored.add.map(replace) };
}

/** Reader side of withStringRefs. */
function resolveStrings(value: unknown, request: TapeRequest, field: string): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveStrings(v, request, field));
  if (!isObject(value)) return value;
  if (Array.isArray(value.$s) && Object.keys(value).length === 1) {
    let found: unknown = request;
    for (const step of value.$s as Path) found = (found as Json | undefined)?.[step];
    if (typeof found !== "string")
      throw new TapeReferenceError(`${field} refers to request.${value.$s.join(".")}, which is no text`);
    return found;
  }
  const out: Json = {};
  for (const key in value) out[key] = resolveStrings(value[key], request, field);
  return out;
}

/** The longest shared prefix among the candidates, as a reference; the array itself when none. */
function arrayRef<T extends { seq: number }>(
  items: unknown[],
  candidates: T[],
  pick: (candidate: T) => unknown,
): unknown[] | ArrayRef {
  let best: ArrayRef | undefined;
  for (const candidate of candidates) {
    const base = pick(candidate);
    if (!Array.isArray(base)) continue;
    const count = longerSharedPrefix(items, base, best?.count ?? 0);
    if (count > 0) best = { $from: candidate.seq, count, add: [] };
    if (count === items.length) break;
  }
  if (!best) return items;
  best.add = items.slice(best.count);
  return best;
}

/**
 * The length of the prefix a and b share when it is longer than `floor` (the best match so far),
 * else 0. The item at `floor` is compared first and then those before it from the end, so an older
 * call that cannot beat the best (its history differs near the end, e.g. where an earlier cache
 * breakpoint sat) is rejected after a comparison or two instead of a walk through the whole history.
 */
function longerSharedPrefix(a: unknown[], b: unknown[], floor: number): number {
  const n = Math.min(a.length, b.length);
  if (floor >= n) return 0;
  for (let i = floor; i >= 0; i--) if (!deepEqual(a[i], b[i])) return 0;
  let i = floor + 1;
  while (i < n && deepEqual(a[i], b[i])) i++;
  return i;
}

/** Structural equality of JSON values; `undefined` members count as absent, as in JSON. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b) || !isPlain(a) || !isPlain(b)) return false;
  // Fast path: the same own keys in the same order (how the same code builds the same value).
  const x = a as Json;
  const y = b as Json;
  const kx = Object.keys(x);
  const ky = Object.keys(y);
  if (kx.length === ky.length) {
    let sameOrder = true;
    for (let i = 0; i < kx.length; i++) {
      const key = kx[i] as string;
      if (key !== ky[i]) {
        sameOrder = false;
        break;
      }
      if (!deepEqual(x[key], y[key])) return false;
    }
    if (sameOrder) return true;
  }
  // JSON semantics otherwise: key order does not matter and undefined members count as absent.
  let keys = 0;
  for (const key of kx) {
    if (x[key] === undefined) continue;
    if (!deepEqual(x[key], y[key])) return false;
    keys++;
  }
  for (const key of ky) if (y[key] !== undefined) keys--;
  return keys === 0;
}

/** A plain JSON object; anything else (a Date, a Map) equals only itself. */
function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function wireField(wire: unknown, key: string): unknown {
  return isObject(wire) ? wire[key] : undefined;
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isArrayRef(value: unknown): value is ArrayRef {
  return (
    isObject(value) &&
    typeof value.$from === "number" &&
    typeof value.count === "number" &&
    Array.isArray(value.add)
  );
}

function isSameRef(value: unknown): value is SameRef {
  return isObject(value) && typeof value.$same === "number";
}
