// Every documented alias gets exactly the rules of what it stands for (issue 38, item 1): a SAM
// written with a section alias (`Background`, `Tasks`, `Acceptance criteria` …), a sub-SAM alias
// (`Subtask:`, `SubSAM:` …) or the older ```check hidden``` parses to the same tree and gives the
// same diagnostics, at the same places, as the canonical spelling, on valid SAMs and on broken ones.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSamString } from "../../runner/sam/parse.ts";
import { SECTION_ALIASES } from "../../runner/sam/sections.ts";

interface Spelling {
  context: string;
  todo: string;
  expectation: string;
  sub: string;
  compare: string;
}

const CANONICAL: Spelling = {
  context: "Context",
  todo: "To-do",
  expectation: "Expectation",
  sub: "Sub-SAM",
  compare: "compare",
};

/** SAM bodies, valid and broken, written with the headings and fence of `s`. */
const BODIES: Record<string, (s: Spelling) => string> = {
  valid: (s) =>
    `# T\n\n## ${s.context}\nWhy.\n\n## ${s.todo}\nDo.\n\n## ${s.expectation}\n- Ok.\n  \`\`\`check outputs=r.txt\n  true\n  \`\`\`\n  \`\`\`${s.compare} timeout=10s\n  cmp outputs/r.txt checks/ref.txt\n  \`\`\`\n\n## ${s.sub}: part\n### ${s.todo}\nMore.\n\n### ${s.expectation}\n- Also.\n`,
  "check in To-do, compare reads the agent's file": (s) =>
    `# T\n\n## ${s.todo}\nDo.\n\`\`\`${s.compare}\ncmp x y\n\`\`\`\n\n## ${s.expectation}\n- Ok.\n  \`\`\`${s.compare}\n  python3 checks/ref.txt answer.txt\n  \`\`\`\n`,
  "bad options, empty sub-SAM Expectation, duplicate section": (s) =>
    `# T\n\n## ${s.todo}\nDo.\n\n## ${s.todo}\nAgain.\n\n## ${s.expectation}\n- Ok.\n  \`\`\`${s.compare} outputs=a.txt strict\n  cmp outputs/a.txt checks/ref.txt\n  \`\`\`\n\n## ${s.sub}: part\n### ${s.todo}\nMore.\n\n### ${s.expectation}\n`,
  "misplaced sections": (s) =>
    `# T\n\n## ${s.todo}\nDo.\n\n### ${s.expectation}\n- Ok.\n\n## ${s.sub}: a\n## ${s.expectation}\n- x\n`,
};

const dir = mkdtempSync(join(tmpdir(), "scifi-aliases-"));
mkdirSync(join(dir, "checks"));
writeFileSync(join(dir, "checks", "ref.txt"), "1\n");
const FILE = join(dir, "task.md");

function parse(body: string): unknown {
  const text = `---\nname: aliases\nhidden_assets: [checks/ref.txt]\n---\n${body}`;
  const result = parseSamString(text, FILE);
  // The file's hash differs with the spelling; everything else must not.
  return result.ok ? { ...result, sam: { ...result.sam, sha256: "", files: [] } } : result;
}

/**
 * The result with the spelling's own words put back to the canonical ones where they are quoted
 * (verbatim section text, a message quoting the heading as written): the rest must not differ.
 */
function asCanonical(result: unknown, spelling: Spelling): unknown {
  let json = JSON.stringify(result);
  for (const key of Object.keys(CANONICAL) as (keyof Spelling)[]) {
    const [from, to] = [spelling[key], CANONICAL[key]];
    if (from === to) continue;
    // Not where a message names both spellings (```compare``` or ```check hidden```).
    const quoted = new RegExp(`(\`|# )${from.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?!\`\`)`, "g");
    json = json.replace(quoted, `$1${to}`);
  }
  return JSON.parse(json);
}

const aliasesOf = (kind: string) => Object.keys(SECTION_ALIASES).filter((a) => SECTION_ALIASES[a] === kind);

/** One spelling per alias (the other parts canonical), each alias also in upper case. */
function spellings(): [string, Spelling][] {
  const out: [string, Spelling][] = [];
  for (const kind of ["context", "todo", "expectation"] as const)
    for (const alias of aliasesOf(kind)) {
      out.push([`${kind} as ${alias}`, { ...CANONICAL, [kind]: alias }]);
      out.push([`${kind} as ${alias.toUpperCase()}:`, { ...CANONICAL, [kind]: `${alias.toUpperCase()}:` }]);
    }
  for (const sub of ["SubSAM", "Subtask", "Sub-task", "sub sam", "SUB-TASK"])
    out.push([`sub-SAM as ${sub}`, { ...CANONICAL, sub }]);
  out.push(["compare as check hidden", { ...CANONICAL, compare: "check hidden" }]);
  return out;
}

describe("aliases get exactly the rules of what they stand for", () => {
  it("covers every documented alias", () => {
    expect(aliasesOf("context")).toEqual(["context", "background"]);
    expect(aliasesOf("todo")).toEqual(["to-do", "todo", "to do", "task", "tasks"]);
    expect(aliasesOf("expectation")).toEqual([
      "expectation",
      "expectations",
      "acceptance",
      "acceptance criteria",
    ]);
  });

  for (const [name, body] of Object.entries(BODIES)) {
    const expected = parse(body(CANONICAL));
    it.each(spellings())(`${name}: %s`, (_label, spelling) => {
      expect(asCanonical(parse(body(spelling)), spelling)).toEqual(expected);
    });
  }

  it("the broken bodies are broken and the valid one is valid (the comparisons compare something)", () => {
    const results = Object.entries(BODIES).map(([name, body]) => [name, parse(body(CANONICAL))] as const);
    for (const [name, result] of results) {
      const r = result as { ok: boolean; diagnostics: { message: string }[] };
      expect(r.ok, name).toBe(name === "valid");
      if (name !== "valid") expect(r.diagnostics.length, name).toBeGreaterThan(1);
    }
    const broken = results[1]?.[1] as { diagnostics: { message: string }[] } | undefined;
    const reads = (broken?.diagnostics ?? []).map((d) => d.message);
    expect(reads.join("\n")).toMatch(/a compare stage reads `answer.txt`, which is neither a check asset/);
  });
});
