// Front matter: gray-matter splits it off, and the YAML is read into MetaNodes that keep source
// offsets, so metadata errors point at the offending key. Plain front matter takes js-yaml's event
// parser (yaml-fast.ts); anything else, and anything malformed, the `yaml` package's Document, the
// reference. Hostile YAML is neutralised here: no custom tags, no `__proto__` keys, alias expansion
// capped, no JS engines.
import matter from "gray-matter";
import {
  type Document,
  type DocumentOptions,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  type Node,
  type ParseOptions,
  parseDocument,
  type SchemaOptions,
  visit,
} from "yaml";
import type { DiagnosticSink } from "./diagnostics.ts";
import { fastFrontMatter, type MetaDoc, type MetaNode, type MetaPair } from "./yaml-fast.ts";

export interface FrontMatter {
  /** The YAML's top level, or undefined when there is no front matter, it is empty or malformed. */
  doc?: MetaDoc;
  /** Offset in the file text where the YAML text starts (YAML ranges are relative to it). */
  yamlStart: number;
  /** True when the front matter is so broken that the body cannot be found (never closed). */
  skipBody?: boolean;
  /** The Markdown body after the closing `---`, and its offset in the file text. */
  body: string;
  bodyStart: number;
}

/** Only the YAML 1.2 core tags may be written explicitly; anything else could be a constructor. */
const ALLOWED_TAGS = new Set(
  ["str", "int", "float", "bool", "null", "seq", "map"].map((t) => `tag:yaml.org,2002:${t}`),
);
/** Alias expansion beyond this is an alias bomb (billion laughs), not metadata. */
export const MAX_ALIAS_COUNT = 100;

const YAML_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  schema: "core",
  version: "1.2",
  uniqueKeys: true,
  merge: false,
  prettyErrors: false,
  strict: true,
  customTags: [],
};

class RejectedLanguage extends Error {}

const rejectEngine = {
  parse: (): never => {
    throw new RejectedLanguage();
  },
};

/** gray-matter's default engines include `javascript`, which evals; every non-YAML engine rejects. */
const ENGINES = {
  // gray-matter cuts the block before the closing `\n---`, leaving a CRLF file's last `\r` alone,
  // which yaml reads as stray content; a space keeps every offset the same.
  yaml: { parse: (text: string) => ({ yaml: text.replace(/\r$/, " ") }) },
  javascript: rejectEngine,
  js: rejectEngine,
  json: rejectEngine,
  toml: rejectEngine,
  coffee: rejectEngine,
  coffeescript: rejectEngine,
  cson: rejectEngine,
};

const OPENING = /^---[^\S\n]*\w*[^\S\n]*\r?\n/;
/** Blank lines, then what looks like an opening `---`: front matter that does not start the file. */
const LATE_OPENING = /^(?:[^\S\n]*\r?\n)+(?=---[^\S\n]*\r?\n[\s\S]*?\n---)/;

export function splitFrontMatter(text: string, sink: DiagnosticSink): FrontMatter {
  const late = LATE_OPENING.exec(text);
  if (late) {
    // Report once, then read it as front matter anyway so the rest of the file is checked too.
    sink.error(
      late[0].length,
      "front matter must start with `---` on the very first line; remove the blank lines above it",
    );
    return shift(splitAt(text.slice(late[0].length), sink, late[0].length), late[0].length);
  }
  return splitAt(text, sink, 0);
}

function shift(front: FrontMatter, by: number): FrontMatter {
  return { ...front, yamlStart: front.yamlStart + by, bodyStart: front.bodyStart + by };
}

/** `text` starts at `origin` in the file; diagnostics are reported at file offsets. */
function splitAt(text: string, sink: DiagnosticSink, origin: number): FrontMatter {
  if (!OPENING.test(text) && text !== "---") return { yamlStart: 0, body: text, bodyStart: 0 };
  const language = matter.language(text.slice(3));
  const yamlStart = 3 + language.raw.length;
  const close = text.indexOf("\n---", yamlStart - 1);
  if (close === -1) {
    sink.error(
      origin,
      "front matter starts with `---` on line 1 but is never closed; end it with a line `---`",
    );
    return { yamlStart, body: "", bodyStart: text.length, skipBody: true };
  }
  let file: { data: { yaml?: string }; content: string };
  try {
    file = matter(text, { engines: ENGINES }) as unknown as typeof file;
  } catch (error) {
    if (!(error instanceof RejectedLanguage || /not registered/.test(String(error)))) throw error;
    const name = language.name || "?";
    sink.error(
      origin,
      `front matter language \`${name}\` is not allowed; SAM front matter is YAML only (remove \`${name}\` after the opening \`---\`)`,
    );
    const lineEnd = text.indexOf("\n", close + 1);
    const bodyStart = lineEnd === -1 ? text.length : lineEnd + 1;
    return { yamlStart, body: text.slice(bodyStart), bodyStart };
  }
  const bodyStart = text.length - file.content.length;
  const yaml = file.data.yaml;
  if (yaml === undefined) return { yamlStart, body: file.content, bodyStart };
  const fast = fastFrontMatter(yaml);
  if (fast) return { doc: fast, yamlStart, body: file.content, bodyStart };
  const doc = documentFrontMatter(yaml, text.slice(yamlStart), yamlStart + origin, sink);
  return doc
    ? { doc, yamlStart, body: file.content, bodyStart }
    : { yamlStart, body: file.content, bodyStart };
}

/**
 * The reference reading: the `yaml` package's Document, checked (errors and hostile constructs
 * reported at file offsets: `yamlText` starts with the YAML, at `yamlStart` in the file).
 * Undefined when the front matter is empty or was reported.
 */
export function documentFrontMatter(
  yaml: string,
  yamlText: string,
  yamlStart: number,
  sink: DiagnosticSink,
): MetaDoc | undefined {
  const doc = parseDocument(yaml, YAML_OPTIONS);
  return checkYaml(doc, yamlText, yamlStart, sink) ? metaDoc(doc) : undefined;
}

/** The Document's top level as MetaNodes (values converted to JS when read, as before). */
function metaDoc(doc: Document): MetaDoc | undefined {
  const contents = doc.contents;
  if (contents === null || contents === undefined) return undefined;
  if (!isMap(contents)) return { kind: "other", start: contents.range?.[0] ?? 0 };
  const pairs: MetaPair[] = contents.items.map((pair) => {
    const key = pair.key as Node | null;
    const value = pair.value as Node | null;
    return {
      key: isScalar(key) && typeof key.value === "string" ? key.value : undefined,
      keyStart: key?.range?.[0] ?? 0,
      value: value ? metaNode(doc, value) : undefined,
    };
  });
  return { kind: "map", pairs };
}

function metaNode(doc: Document, node: Node | null): MetaNode {
  if (!node) return { start: 0, value: () => null };
  return {
    start: node.range?.[0] ?? 0,
    ...(isSeq(node) ? { items: node.items.map((item) => metaNode(doc, item as Node | null)) } : {}),
    value: () => node.toJS(doc, { maxAliasCount: MAX_ALIAS_COUNT }),
  };
}

/** Reports YAML syntax errors and hostile constructs; true when the document is safe to read. */
/** `yamlText` starts with the YAML source; `yamlStart` is its offset in the file. */
function checkYaml(doc: Document, yamlText: string, yamlStart: number, sink: DiagnosticSink): boolean {
  let ok = true;
  for (const error of doc.errors) {
    ok = false;
    if (error.code === "DUPLICATE_KEY") {
      const key = /^[^:\n]*/.exec(yamlText.slice(error.pos[0]))?.[0].trim() ?? "";
      sink.error(yamlStart + error.pos[0], `duplicate metadata key \`${key}\`; each key may appear once`);
    } else {
      sink.error(yamlStart + error.pos[0], `malformed YAML front matter: ${firstLine(error.message)}`);
    }
  }
  if (!ok) return false;
  let hasAlias = false;
  visit(doc, {
    Node(_key, node: Node) {
      if (isAlias(node)) {
        hasAlias = true;
        if (node.resolve(doc) === undefined) {
          ok = false;
          sink.error(
            yamlStart + (node.range?.[0] ?? 0),
            `malformed YAML front matter: the alias \`*${node.source}\` has no anchor \`&${node.source}\` before it; define the anchor first or write the value out`,
          );
        }
      }
      if (node.tag && !ALLOWED_TAGS.has(node.tag)) {
        ok = false;
        const written = node.tag.replace(/^tag:yaml\.org,2002:/, "!!");
        // The node's range starts after its tag; point at the tag itself when it can be found.
        const valueAt = node.range?.[0] ?? 0;
        const tagAt = yamlText.lastIndexOf(written, valueAt);
        sink.error(
          yamlStart + (tagAt === -1 ? valueAt : tagAt),
          `hostile YAML: custom tag \`${written}\` is not allowed in SAM metadata; write a plain value`,
        );
      }
      if (isMap(node)) {
        for (const pair of node.items) {
          if (isScalar(pair.key) && pair.key.value === "__proto__") {
            ok = false;
            sink.error(
              yamlStart + (pair.key.range?.[0] ?? 0),
              "hostile YAML: key `__proto__` is not allowed (it would alter object prototypes); remove it",
            );
          }
        }
      }
    },
  });
  if (ok && hasAlias && !aliasesWithinLimit(doc)) {
    ok = false;
    sink.error(
      yamlStart + firstAliasOffset(doc),
      `hostile YAML: aliases expand beyond ${MAX_ALIAS_COUNT} nodes (an alias bomb); write the values out instead`,
    );
  }
  return ok;
}

function aliasesWithinLimit(doc: Document): boolean {
  try {
    doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    return true;
  } catch (error) {
    if (error instanceof ReferenceError && /resource exhaustion/.test(error.message)) return false;
    throw error;
  }
}

function firstAliasOffset(doc: Document): number {
  let offset = 0;
  visit(doc, {
    Alias(_key, node) {
      offset = node.range?.[0] ?? 0;
      return visit.BREAK;
    },
  });
  return offset;
}

function firstLine(message: string): string {
  return (message.split("\n")[0] ?? message).replace(/ at line \d+, column \d+:?$/, "");
}
