// The front matter's fast path. The `yaml` package's Document (frontmatter.ts) is the reference: it
// keeps every node's source range, reports syntax errors with positions and sees tags and aliases,
// but building it costs ~150 µs for a typical front matter. js-yaml's event parser gives the same
// structure with source offsets in ~10 µs. This module reads those events into MetaNodes only for
// the plain cases where the two are proven to agree (test/sam/yaml-fast.test.ts compares them on a
// table of edge cases); for anything else it returns undefined and the caller builds the Document.
//
// Routed to the Document (undefined here): any parse error (js-yaml throws), more or fewer than one
// document, `---`/`...` markers, directives, anchors, aliases, tags (explicit or not, including
// `!!str`), block scalars (`|`, `>`), scalars spanning lines (folding), double-quoted scalars with
// escapes, empty values (their position differs), keys that are not plain strings (`1:`, `null:`,
// `{a: 1}:`), `__proto__` and `<<` keys, duplicate keys at any depth, single-pair maps inside flow
// sequences (`[a: 1]`), a top level that is not a block mapping, text with tabs, CR, NUL or a BOM
// (the `yaml` package drops a BOM, js-yaml keeps it in the key), and lines of 1,000 characters or
// more (the `yaml` package refuses implicit keys over 1,024).
// Plain scalars are resolved here with the `yaml` package's own YAML 1.2 core schema rules (its
// regexes and conversions, in its order), so the reference decides what `0755`, `yes` or `.inf`
// mean, whatever a later js-yaml's schema does.
import { EVENT_ID, type Event, getScalarValue, parseEvents, SCALAR_STYLE, type ScalarEvent } from "js-yaml";
import { isScalar, type ScalarTag, Schema } from "yaml";

/** A value node: where it starts (offset in the YAML text) and, for a sequence, its items. */
export interface MetaNode {
  start: number;
  /** The items when the node is a YAML sequence (not through an alias). */
  items?: MetaNode[];
  /** The node as a JS value (lazily computed on the Document path). */
  value(): unknown;
}

/** A top-level `key: value` pair. `key` is undefined when the key is not a plain string scalar. */
export interface MetaPair {
  key: string | undefined;
  keyStart: number;
  value: MetaNode | undefined;
}

/** The front matter's top level: a mapping's pairs, or something else (reported as an error). */
export type MetaDoc = { kind: "map"; pairs: MetaPair[] } | { kind: "other"; start: number };

/** Gives up: the caller builds the `yaml` Document instead. */
class Bail extends Error {}
const BAIL = new Bail();

/** The core schema's scalar tags (null, bool, int, float) in the order the `yaml` package tries them. */
const CORE_SCALARS = new Schema({ schema: "core" }).tags.filter(
  (t): t is ScalarTag & { test: RegExp } => t.default === true && "test" in t && t.test instanceof RegExp,
);
// Every core pattern starts with one of these characters or matches the empty text: anything else is
// a string without trying them (test/sam/yaml-fast.test.ts holds this against the yaml Document).
const MAY_RESOLVE = new Set([..."~nNtTfF+-.0123456789"].map((c) => c.charCodeAt(0)));
const RESOLVE_OPTIONS = { intAsBigInt: false };

/** A plain scalar's value under the YAML 1.2 core schema, resolved by the `yaml` package's own tags. */
export function resolvePlain(text: string): unknown {
  if (text !== "" && !MAY_RESOLVE.has(text.charCodeAt(0))) return text;
  for (const tag of CORE_SCALARS) {
    if (!tag.test.test(text)) continue;
    let failed = false;
    const value = tag.resolve(
      text,
      () => {
        failed = true;
      },
      RESOLVE_OPTIONS,
    );
    if (failed) throw BAIL;
    return isScalar(value) ? value.value : value;
  }
  return text;
}

interface Built {
  node: MetaNode;
  js: unknown;
}

class Reader {
  i = 0;
  readonly events: Event[];
  readonly text: string;
  constructor(events: Event[], text: string) {
    this.events = events;
    this.text = text;
  }

  next(): Event {
    const event = this.events[this.i++];
    if (!event) throw BAIL;
    return event;
  }

  /** Reads one node (its first event already taken). `inFlowSeq`: a map here must be `{...}`. */
  node(event: Event, inFlowSeq: boolean): Built {
    if (event.type === EVENT_ID.SCALAR) {
      const js = this.scalar(event);
      return { node: fixed(scalarStart(event), js), js };
    }
    if (event.type === EVENT_ID.SEQUENCE) {
      if (event.anchorStart !== -1 || event.tagStart !== -1) throw BAIL;
      const flow = this.text[event.start] === "[";
      const items: MetaNode[] = [];
      const js: unknown[] = [];
      for (let e = this.next(); e.type !== EVENT_ID.POP; e = this.next()) {
        const item = this.node(e, flow);
        items.push(item.node);
        js.push(item.js);
      }
      return { node: { start: event.start, items, value: () => js }, js };
    }
    if (event.type === EVENT_ID.MAPPING) {
      if (event.anchorStart !== -1 || event.tagStart !== -1) throw BAIL;
      if (inFlowSeq && this.text[event.start] !== "{") throw BAIL;
      const js = this.mapping();
      return { node: { start: event.start, value: () => js }, js };
    }
    throw BAIL; // aliases, a second document
  }

  /** The pairs of a mapping whose MAPPING event was taken; returns the JS object. */
  mapping(pairs?: MetaPair[]): Record<string, unknown> {
    const js: Record<string, unknown> = {};
    const seen = new Set<string>();
    for (let e = this.next(); e.type !== EVENT_ID.POP; e = this.next()) {
      if (e.type !== EVENT_ID.SCALAR) throw BAIL;
      const key = this.scalar(e);
      if (typeof key !== "string" || key === "__proto__" || key === "<<" || seen.has(key)) throw BAIL;
      seen.add(key);
      const value = this.node(this.next(), false);
      js[key] = value.js;
      pairs?.push({ key, keyStart: scalarStart(e), value: value.node });
    }
    return js;
  }

  scalar(event: ScalarEvent): unknown {
    if (event.anchorStart !== -1 || event.tagStart !== -1 || event.valueStart < 0) throw BAIL;
    const raw = this.text.slice(event.valueStart, event.valueEnd);
    if (raw.includes("\n")) throw BAIL;
    switch (event.style) {
      case SCALAR_STYLE.PLAIN:
        return resolvePlain(raw);
      case SCALAR_STYLE.SINGLE_QUOTED:
        return getScalarValue(this.text, event);
      case SCALAR_STYLE.DOUBLE_QUOTED:
        if (raw.includes("\\")) throw BAIL;
        return getScalarValue(this.text, event);
      default:
        throw BAIL; // block scalars
    }
  }
}

/** The `yaml` package's range starts at a quoted scalar's opening quote; js-yaml's after it. */
function scalarStart(event: ScalarEvent): number {
  return event.style === SCALAR_STYLE.SINGLE_QUOTED || event.style === SCALAR_STYLE.DOUBLE_QUOTED
    ? event.valueStart - 1
    : event.valueStart;
}

function fixed(start: number, js: unknown): MetaNode {
  return { start, value: () => js };
}

const UNSAFE_TEXT = /[\t\r\0\ufeff&*!|>]|^(?:---|\.\.\.|%)/m;
/** The `yaml` package refuses an implicit key whose `:` is over 1024 characters from its start. */
const LONG_LINE = /[^\n]{1000}/;

/**
 * The front matter read by the fast path, or undefined when it must go to the `yaml` Document
 * (which then also reports any error). Never reports anything itself.
 */
export function fastFrontMatter(yamlText: string): MetaDoc | undefined {
  // Cheap refusals first: characters that start tags, anchors, aliases or block scalars anywhere
  // (even inside quotes: a needless detour is harmless), tabs, CR, NUL, BOM, document markers.
  if (UNSAFE_TEXT.test(yamlText) || LONG_LINE.test(yamlText)) return undefined;
  let events: Event[];
  try {
    events = parseEvents(yamlText, {});
  } catch {
    return undefined;
  }
  if (events.length < 3) return undefined;
  const doc = events[0];
  if (doc?.type !== EVENT_ID.DOCUMENT || doc.explicitStart || doc.explicitEnd || doc.directives.length > 0)
    return undefined;
  const top = events[1];
  if (top?.type !== EVENT_ID.MAPPING || top.anchorStart !== -1 || top.tagStart !== -1) return undefined;
  if (yamlText[top.start] === "{") return undefined;
  const reader = new Reader(events, yamlText);
  reader.i = 2;
  const pairs: MetaPair[] = [];
  try {
    reader.mapping(pairs);
    // The document's own POP, and nothing after it.
    if (reader.next().type !== EVENT_ID.POP || reader.i !== events.length) return undefined;
  } catch {
    return undefined; // BAIL, or anything unexpected from js-yaml: the reference will say
  }
  return { kind: "map", pairs };
}
