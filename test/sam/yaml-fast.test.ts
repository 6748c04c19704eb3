// The front matter's fast path (js-yaml events, runner/sam/yaml-fast.ts) against the reference (the
// `yaml` package's Document, as frontmatter.ts checks and reads it): on every front matter the fast
// path accepts, the reference must report nothing and give the same keys, values and offsets; the
// constructs routed to the reference must stay routed there.

import { describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { DiagnosticSink } from "../../runner/sam/diagnostics.ts";
import { documentFrontMatter } from "../../runner/sam/frontmatter.ts";
import { parseSamString } from "../../runner/sam/parse.ts";
import type { Diagnostic } from "../../runner/sam/types.ts";
import { fastFrontMatter, type MetaDoc, type MetaNode, resolvePlain } from "../../runner/sam/yaml-fast.ts";

/** Numbers JSON cannot tell apart (NaN, infinities, -0) written out, so a drift shows. */
function encode(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    typeof v === "number" && (!Number.isFinite(v) || Object.is(v, -0))
      ? `number:${Object.is(v, -0) ? "-0" : String(v)}`
      : v,
  );
}

function materialise(node: MetaNode | undefined): unknown {
  if (!node) return null;
  return { start: node.start, items: node.items?.map(materialise) ?? null, value: node.value() };
}

function project(doc: MetaDoc | undefined): string {
  if (!doc) return "none";
  if (doc.kind !== "map") return encode(doc);
  return encode(
    doc.pairs.map((p) => ({ key: p.key ?? null, keyStart: p.keyStart, value: materialise(p.value) })),
  );
}

function reference(yaml: string): { doc: MetaDoc | undefined; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const doc = documentFrontMatter(yaml, yaml, 0, new DiagnosticSink("fm.md", yaml, diagnostics));
  return { doc, diagnostics };
}

// biome-ignore format: a table
const PLAIN = [
  "true", "false", "True", "TRUE", "tRue", "yes", "no", "on", "off", "y", "n", "Yes", "OFF", "0755", "0o755",
  "0o8", "0x1F", "0X1F", "0xg", "0b101", "1_000", "1_0.5", "+12", "-0", "+0", "12", "-7", "0", "00", "1e3",
  "1E+3", ".5", "1.", "-1.5e-3", "+.5", ".5e3", "1.0", "2.50", "1.e2", "e3", ".inf", "-.inf", "+.inf",
  ".Inf", ".INF", ".iNf", ".nan", ".NaN", ".NAN", "NaN", "inf", "-.nan", "12345678901234567890",
  "9007199254740993", "0x1fffffffffffffffff", "0.1e400", "1e-400", "-1e400", "null", "~", "Null", "NULL",
  "nULL", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "12:30:00", "1:20", "190:20:30", "1h30m", "4G", "$3",
  "a#b", "café", "héllo wörld", "x.y", "-x", "+", ".",
];

// biome-ignore format: a table
const VALUES = [
  ...PLAIN, "", "-", "# comment", "plain # comment", "a #b", '"quoted"', "'single'", "'it''s'", '"esc\\n"',
  '"\\u00e9"', '"bad\\q"', '"x\\"y"', "''", '""', "'5'", '"true"', '"null"', "'0x1F'", "[a, b]", "[]", "{}",
  "{a: 1}", "[a: 1]", "[{a: 1}]", "[1, [2]]", "[ a , b , ]", "[a, b", "{work: 2, control: 3}",
  "{work: 2, work: 3}", "{'work': 2, work: 3}", "{1: a, '1': b}", "[a,\n  b]", "{a: 1,\n  b: 2}", "&a x",
  "*a", "!!str 5", '!!int "5"', "!custom x", "!!binary aGk=", "!!timestamp 2001-12-14", "! x", "|\n  lit",
  ">-\n  fold", "multi\n  line", '"multi\n  line"', "\n  - a\n  - b", "\n- a\n- b",
  "\n  - {host: /a, container: /b}\n  - /x:/y:rw", "\n  -\n  - x", "\n  - - nested", "\n  - a: 1\n    b: 2",
  "\n  work: 2\n  control: 3", "\n  work: 2\n   control: 3", "\n  ? work\n  : 2", "\n  __proto__: 1",
  "\n  <<: {a: 1}", "@bad", "`bad", "x: y", ": bad", '"unterminated', "[unclosed", "- a", "a, b", "a: b: c",
  '"*.example.org"', '"😀"', "[data.example.org, bad host, 5]",
];

// biome-ignore format: a table
const KEYS = [
  "name", "mounts", "unknown", "1", "null", "~", "true", "'true'", '"name"', "__proto__", "<<", "? name",
  "[a]", "{a: 1}", "-1", "0x1", ".inf", '""', "café", "name ", "a b",
];

// biome-ignore format: a table
const DOCUMENTS = [
  "", "\n", "# only a comment\n", "name: a\nname: b\n", 'name: a\n"name": b\n', "- a\n- b\n", "scalar\n",
  "{name: a, gpu: 1}\n", "base: &b {work: 2}\nrank: *b\n", "rank:\n  <<: {work: 2}\n  control: 3\n",
  "name: a\n...\n", "%YAML 1.2\n---\nname: a\n", "--- \nname: a\n", "name: a\n---\nname: b\n", "name:\ta\n",
  "\tname: a\n", "name: a\r\ngpu: 1\r\n", "name: a\0\n", "  name: a\n", "name: a\n  gpu: 1\n",
  "name: a\n gpu: 1\n", "name: a # c\ngpu: 1 # d\n", "name: a\n# c\ngpu: 1\n", "name: a\n\n\ngpu: 1\n",
  "!!map\nname: a\n", "? name\n: a\n", "name :a\n", "name:a\n", "name: a\n  # indented comment\n",
  "name: a\n#no space\n", "name: *missing\n",
  "name: a\ngpu: 1\nmounts:\n  - /data/run1:/data:ro\n  - {host: /r, container: /ref, mode: ro}\nskills: [root, pandas]\nrank: {work: 2, control: 3}\n",
];

/** Layouts where the `yaml` package is stricter than js-yaml (indentation, comments, long keys). */
// biome-ignore format: a table
const LAYOUTS = [
  "mounts:\n  - a\n   - b\n", "mounts:\n  - a\n - b\n", "k: [a,\nb]\n", "k: {a: 1,\nb: 2}\n", "k: [a\n: b]\n",
  "k: [a,\n  ]\n", "k:\n  [a,\n  b]\n", "k:\n  a: [b,\n c]\n", 'k: "a"#c\n', "k: [a]#c\n", "k: {a: 1}#c\n",
  "k:\n  - a\n# c\n  - b\n", "k: {a: 1, b}\n", "k: [a, b: c]\n", "k: [a\n  b]\n", "k: {a: b\n  c}\n", "x: 1\ny\n",
  "\ufeffname: a\n", "name: a\n\ufeffgpu: 1\n", "name: \ufeffa\n", `${"k".repeat(1100)}: 1\n`, `"${"k".repeat(1100)}": 1\n`, `a:\n  ${"k".repeat(1030)}: 1\n`, `a: [${"k".repeat(1100)}: 1]\n`,
];

const CASES = [
  ...KEYS.flatMap((k) => VALUES.map((v) => `${k}: ${v}\n`)),
  ...VALUES.map((v) => `mounts:\n  - ${v}\n  - ${v}\n`),
  ...VALUES.map((v) => `rank: {work: ${v}}\n`),
  ...DOCUMENTS,
  ...LAYOUTS,
];

describe("the front matter's fast path", () => {
  it("gives what the yaml Document gives, wherever it is taken", () => {
    let taken = 0;
    for (const yaml of CASES) {
      const fast = fastFrontMatter(yaml);
      if (!fast) continue;
      taken++;
      const ref = reference(yaml);
      expect(ref.diagnostics, yaml).toEqual([]);
      expect(project(fast), yaml).toBe(project(ref.doc));
    }
    // The table is meant to reach the fast path on most plain cases; a path that always gives up
    // would pass the loop above trivially.
    expect(taken).toBeGreaterThan(CASES.length / 4);
  });

  it("resolves plain scalars as the yaml package's YAML 1.2 core schema does", () => {
    const differ = PLAIN.filter((text) => {
      const expected = parseDocument(`a: ${text}\n`, { schema: "core", version: "1.2" }).toJS().a;
      return encode(resolvePlain(text)) !== encode(expected);
    });
    expect(differ).toEqual([]);
  });

  it.each([
    ["an anchor", "name: &a x\n"],
    ["an alias", "a: &a x\nname: *a\n"],
    ["a merge key", "rank:\n  <<: {work: 2}\n"],
    ["an explicit core tag", "gpu: !!int 1\n"],
    ["a custom tag", "name: !x y\n"],
    ["a block scalar", "name: |\n  x\n"],
    ["a multi-line plain scalar", "name: a\n  b\n"],
    ["a double-quoted escape", 'name: "a\\tb"\n'],
    ["an empty value", "name:\n"],
    ["a duplicate key", "name: a\nname: b\n"],
    ["a duplicate nested key", "rank: {work: 1, work: 2}\n"],
    ["a non-string key", "1: a\n"],
    ["a __proto__ key", "__proto__: a\n"],
    ["a document end marker", "name: a\n...\n"],
    ["a directive", "%YAML 1.2\n---\nname: a\n"],
    ["a tab", "name:\ta\n"],
    ["a CR", "name: a\r\n"],
    ["a flow mapping at the top", "{name: a}\n"],
    ["a sequence at the top", "- a\n"],
    ["a pair in a flow sequence", "skills: [a: 1]\n"],
    ["a syntax error", "name: [a\n"],
  ])("leaves %s to the yaml Document", (_what, yaml) => {
    expect(fastFrontMatter(yaml)).toBeUndefined();
  });

  it("parses whole SAMs identically either way (diagnostics, lines, values)", () => {
    const body = "# T\n\n## To-do\nDo.\n\n## Expectation\n- Done.\n  ```check\n  true\n  ```\n";
    // A trailing comment with a tag character routes the same front matter to the Document; the
    // same comment without it keeps the fast path; both have the same lines and offsets.
    const parse = (yaml: string, comment: string) =>
      encode(parseSamString(`---\n${yaml}${comment}---\n${body}`, "/nonexistent/t/task.md")).replace(
        /"sha256":"[0-9a-f]+"/g,
        "",
      );
    let compared = 0;
    for (const yaml of CASES) {
      if (!fastFrontMatter(`${yaml}# xx\n`) || fastFrontMatter(`${yaml}# !x\n`)) continue;
      compared++;
      expect(parse(yaml, "# xx\n"), yaml).toBe(parse(yaml, "# !x\n"));
    }
    expect(compared).toBeGreaterThan(CASES.length / 4);
  });
});
