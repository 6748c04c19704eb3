// Front matter: gray-matter splits it off, and `yaml` (as gray-matter's only engine) parses it into
// a Document that keeps source ranges, so metadata errors point at the offending key. Hostile YAML
// is neutralised here: no custom tags, no `__proto__` keys, alias expansion capped, no JS engines.
import matter from "gray-matter";
import {
  type Document,
  type DocumentOptions,
  isMap,
  isScalar,
  type Node,
  type ParseOptions,
  parseDocument,
  type SchemaOptions,
  visit,
} from "yaml";
import type { DiagnosticSink } from "./diagnostics.ts";

export interface FrontMatter {
  /** The YAML document, or undefined when there is no front matter or it is malformed. */
  doc?: Document;
  /** Offset in the file text where the YAML text starts (YAML ranges are relative to it). */
  yamlStart: number;
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
  yaml: { parse: (text: string) => ({ doc: parseDocument(text, YAML_OPTIONS) }) },
  javascript: rejectEngine,
  js: rejectEngine,
  json: rejectEngine,
  toml: rejectEngine,
  coffee: rejectEngine,
  coffeescript: rejectEngine,
  cson: rejectEngine,
};

export function splitFrontMatter(text: string, sink: DiagnosticSink): FrontMatter {
  if (!/^---[^\S\n]*\w*[^\S\n]*\r?\n/.test(text) && text !== "---") {
    return { yamlStart: 0, body: text, bodyStart: 0 };
  }
  const language = matter.language(text.slice(3));
  const yamlStart = 3 + language.raw.length;
  if (text.indexOf("\n---", yamlStart - 1) === -1) {
    sink.error(0, "front matter starts with `---` on line 1 but is never closed; end it with a line `---`");
    return { yamlStart, body: "", bodyStart: text.length };
  }
  let file: { data: { doc?: Document }; content: string };
  try {
    file = matter(text, { engines: ENGINES }) as unknown as typeof file;
  } catch (error) {
    const name = language.name || "?";
    if (error instanceof RejectedLanguage || /not registered/.test(String(error))) {
      sink.error(
        0,
        `front matter language \`${name}\` is not allowed; SAM front matter is YAML only (remove \`${name}\` after the opening \`---\`)`,
      );
      return { yamlStart, body: "", bodyStart: text.length };
    }
    throw error;
  }
  const bodyStart = text.length - file.content.length;
  const doc = file.data.doc;
  if (doc && !checkYaml(doc, text, yamlStart, sink)) return { yamlStart, body: file.content, bodyStart };
  return { doc, yamlStart, body: file.content, bodyStart };
}

/** Reports YAML syntax errors and hostile constructs; true when the document is safe to read. */
function checkYaml(doc: Document, text: string, yamlStart: number, sink: DiagnosticSink): boolean {
  let ok = true;
  for (const error of doc.errors) {
    ok = false;
    if (error.code === "DUPLICATE_KEY") {
      const key = /^[^:\n]*/.exec(text.slice(yamlStart + error.pos[0]))?.[0].trim() ?? "";
      sink.error(yamlStart + error.pos[0], `duplicate metadata key \`${key}\`; each key may appear once`);
    } else {
      sink.error(yamlStart + error.pos[0], `malformed YAML front matter: ${firstLine(error.message)}`);
    }
  }
  if (!ok) return false;
  visit(doc, {
    Node(_key, node: Node) {
      if (node.tag && !ALLOWED_TAGS.has(node.tag)) {
        ok = false;
        sink.error(
          yamlStart + (node.range?.[0] ?? 0),
          `hostile YAML: custom tag \`${node.tag}\` is not allowed in SAM metadata; write a plain value`,
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
  if (ok && !aliasesWithinLimit(doc)) {
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
