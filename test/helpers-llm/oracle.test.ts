// The oracle with a SCRIPTED model through the real gateway: schema-checked output, at most three
// findings, both readings, phrases that really occur in the SAM, stable --json, templated prompt.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runOracleCommand } from "../../runner/helpers/oracle/command.ts";
import { checkReply } from "../../runner/helpers/oracle/oracle.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "helpers", "oracle");
const TASK = join(FIXTURES, "dijet.md");

async function oracle(script: string, flags: { json?: boolean; templated?: boolean } = {}) {
  const home = mkdtempSync(join(tmpdir(), "scifi-oracle-"));
  const out: string[] = [];
  const err: string[] = [];
  const code = await runOracleCommand(TASK, {
    ...flags,
    model: `scripted:${join(FIXTURES, script)}`,
    env: { ...process.env, SCIFI_HOME: home },
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  });
  return { code, home, out: out.join(""), err: err.join("") };
}

function tapeCalls(home: string): number {
  const [run] = readdirSync(join(home, "runs"));
  const lines = readFileSync(join(home, "runs", run ?? "", "audit.jsonl"), "utf8")
    .trim()
    .split("\n");
  return lines.filter((l) => JSON.parse(l).kind === "call").length;
}

describe("scifi oracle (scripted model)", () => {
  it("prints findings with both readings and where each phrase is", async () => {
    const r = await oracle("good.yaml");
    expect(r.code).toBe(0);
    expect(r.out).toContain('## 1. "the two leading jets"');
    expect(r.out).toContain(`To-do of \`root\`, ${TASK}:13`);
    expect(r.out).toContain("**Golden (recommended):**");
    expect(r.out).toContain("**Silver (alternative):**");
    expect(r.out).toContain('## 2. "save the values"');
    expect(tapeCalls(r.home)).toBe(1);
  });

  it("--json is stable: same bytes on every run, fixed keys, no run ids or times", async () => {
    const a = await oracle("good.yaml", { json: true });
    const b = await oracle("good.yaml", { json: true });
    expect(a.code).toBe(0);
    expect(a.out).toBe(b.out);
    const report = JSON.parse(a.out);
    expect(Object.keys(report)).toEqual(["task", "sha256", "mode", "findings"]);
    expect(report.findings).toHaveLength(2);
    expect(Object.keys(report.findings[0])).toEqual([
      "phrase",
      "category",
      "where",
      "why",
      "question",
      "golden",
      "silver",
    ]);
    expect(report.findings[0].where).toEqual({ node: "root", section: "todo", file: TASK, line: 13 });
    expect(report.findings[1].where).toMatchObject({ section: "todo", line: 14 });
    expect(a.out).not.toMatch(/oracle-\d{8}T/);
  });

  it("rejects too many findings and invented phrases, and repairs with the reasons", async () => {
    const r = await oracle("repair.yaml", { json: true });
    expect(r.err).not.toContain("no valid oracle report");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).findings.map((f: { phrase: string }) => f.phrase)).toEqual([
      "the two leading jets",
    ]);
    expect(tapeCalls(r.home)).toBe(3);
  });

  it("gives up after three invalid replies with exit 1 and the problems", async () => {
    const r = await oracle("never.yaml");
    expect(r.code).toBe(1);
    expect(r.err).toContain("no valid oracle report in 3 tries");
    expect(r.err).toContain("does not occur");
    expect(r.out).toBe("");
  });

  it("templated mode sends the fixed categories", async () => {
    const r = await oracle("templated.yaml", { json: true, templated: true });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).mode).toBe("templated");
  });

  it("refuses an invalid SAM before calling a model", async () => {
    const err: string[] = [];
    const code = await runOracleCommand(join(FIXTURES, "good.yaml"), {
      model: "scripted:/nonexistent",
      err: (t) => err.push(t),
    });
    expect(code).toBe(2);
    expect(err.join("")).toContain("is not a valid SAM");
  });
});

describe("oracle reply checks", () => {
  const parsed = parseSamSync(TASK);
  if (!parsed.ok) throw new Error("fixture must parse");
  const sam = parsed.sam;
  const finding = (phrase: string, extra: Record<string, unknown> = {}) => ({
    phrase,
    category: "generic",
    why: "w",
    question: "q",
    golden: { reading: "a", rewrite: "b" },
    silver: { reading: "c", rewrite: "d" },
    ...extra,
  });

  it("accepts phrases regardless of case, spacing and backticks, in any node section", () => {
    const r = checkReply({ findings: [finding("THE   dijet mass histogram"), finding("mjj.csv")] }, sam);
    expect(r.problems).toEqual([]);
    expect(r.findings?.map((f) => f.where.section)).toEqual(["expectation", "expectation"]);
  });

  it("rejects a phrase only in the Context, duplicates, identical rewrites, a missing reading and a fourth finding", () => {
    const problems = (v: unknown) => checkReply(v, sam).problems.join("\n");
    expect(problems({ findings: [finding("one row per jet")] })).toContain("does not occur");
    expect(problems({ findings: [finding("save the values"), finding("Save the values")] })).toContain(
      "reported twice",
    );
    expect(
      problems({ findings: [finding("save the values", { silver: { reading: "c", rewrite: "b" } })] }),
    ).toContain("rewrites are the same");
    expect(problems({ findings: [finding("save the values", { silver: undefined })] })).toContain(
      "findings.0.silver",
    );
    const four = ["save the values", "the two leading jets", "dijet candidate", "mjj.csv"].map((p) =>
      finding(p),
    );
    expect(problems({ findings: four })).toContain("at most 3 findings");
    expect(problems({ findings: [finding("save the values", { category: "vibes" })] })).toContain("category");
  });
});
