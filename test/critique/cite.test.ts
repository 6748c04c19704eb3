// The deterministic half of the critique, host-side: citations checked against a task folder (no link
// followed, lines and quotes whitespace-normalised), findings marked unverified when nothing they
// rest on verifies, the mode resolution, the To-do items, and the scripted trace of the example task.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { checkCitation, checkFinding, checkTrace, TaskFileReader } from "../../runner/critique/cite.ts";
import { todoItems } from "../../runner/critique/items.ts";
import { effectiveCritiqueMode } from "../../runner/critique/mode.ts";
import { CritiqueReply, Trace } from "../../runner/critique/schema.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import { REPO } from "../run/harness.ts";

const FIXTURES = join(REPO, "test", "fixtures");

function taskWith(analysis: string): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-cite-"));
  cpSync(join(FIXTURES, "critique", analysis), join(dir, "analysis.py"));
  return dir;
}

/** The scripted tracer's and critique's replies of the example task's block script. */
function scripted() {
  const script = parse(readFileSync(join(FIXTURES, "runs", "lhco-critique-block.yaml"), "utf8")) as {
    tracer: { json?: unknown }[];
    critique: { json: unknown }[];
  };
  const traces = script.tracer.filter((r) => r.json).map((r) => Trace.parse(r.json));
  const critiques = script.critique.map((r) => CritiqueReply.parse(r.json));
  return { traces, critiques };
}

describe("citations, checked host-side", () => {
  it("the wrong version: the definition mismatch verifies on the code; a wrong line and a missing quote do not", () => {
    const reader = new TaskFileReader(taskWith("analysis_wrong.py"));
    const { traces, critiques } = scripted();
    const trace = traces[0] as Trace;
    const checks = checkTrace(reader, trace);
    expect(checks["item:root/t4"]?.map((c) => c.verified)).toEqual([true]);
    expect(checks["item:root/t4"]?.[0]?.lines).toEqual([
      { n: 39, text: '    if any(j["btag"] > 0 for j in jets):' },
    ]);
    // The two-line citation (41-42) verifies with its quote joined across the line break.
    const t5 = checks["item:root/t5"] ?? [];
    expect(t5.map((c) => c.verified)).toEqual([true, false]);
    expect(t5[1]?.problem).toBe("the quoted expression is not on the cited line(s)");
    const findings = (critiques[0]?.findings ?? []).map((f) => checkFinding(reader, f, checks));
    expect(findings.map((f) => [f.type, f.severity, f.verified])).toEqual([
      ["definition_mismatch", "likely_mismatch", true],
      ["composite_violation", "low", true],
      // Rests only on its own citation, which is not on line 3: a model's claim, unverified.
      ["extra_behaviour", "likely_mismatch", false],
    ]);
    expect(findings[0]?.citations.map((c) => `${c.citation.file}:${c.citation.line}`)).toEqual([
      "analysis.py:39",
      "analysis.py:35",
    ]);
  });

  it("the fixed version: the wrong version's trace no longer verifies at the veto", () => {
    const reader = new TaskFileReader(taskWith("analysis_right.py"));
    const { traces } = scripted();
    expect(checkTrace(reader, traces[0] as Trace)["item:root/t4"]?.[0]?.verified).toBe(false);
    expect(checkTrace(reader, traces[1] as Trace)["item:root/t4"]?.[0]?.verified).toBe(true);
  });

  it("follows a link only inside the folder (recorded), refuses paths out of it, and names lines past the end", () => {
    const dir = taskWith("analysis_wrong.py");
    mkdirSync(join(dir, "sub"));
    symlinkSync(join(dir, "analysis.py"), join(dir, "link.py"));
    symlinkSync(dir, join(dir, "sub", "up"));
    symlinkSync("../analysis.py", join(dir, "sub", "rel.py"));
    symlinkSync("/etc/passwd", join(dir, "out.py"));
    symlinkSync("../..", join(dir, "sub", "outer"));
    writeFileSync(join(dir, "short.py"), "x = 1\n");
    const reader = new TaskFileReader(dir);
    const at = (file: string, line = 1, quote = "import json") =>
      checkCitation(reader, { file, line, quote });
    expect(at("analysis.py").verified).toBe(true);
    expect(at("link.py")).toMatchObject({ verified: true, link: "analysis.py" });
    expect(at("sub/up/analysis.py")).toMatchObject({ verified: true, link: "analysis.py" });
    expect(at("sub/rel.py")).toMatchObject({ verified: true, link: "analysis.py" });
    expect(at("out.py")).toMatchObject({
      verified: false,
      shape: true,
      problem: expect.stringMatching(/outside the task folder/),
    });
    expect(at("sub/outer/x.py")).toMatchObject({ verified: false, shape: true });
    expect(at("../etc/passwd").problem).toMatch(/'\.\.' may not leave the task folder/);
    expect(at("/etc/passwd").problem).toMatch(/absolute path/);
    expect(at("missing.py").problem).toMatch(/no such file/);
    expect(at("short.py", 2, "x").problem).toBe("the file has 1 line(s), not line 2");
    // Whitespace differs, the expression is the same.
    expect(at("short.py", 1, "x   =\n 1").verified).toBe(true);
    expect(checkCitation(reader, { file: "short.py", line: 1, end_line: 60, quote: "x" }).problem).toMatch(
      /more than 40 lines/,
    );
  });

  it("a finding that cites nothing the runner can check is unverified", () => {
    const reader = new TaskFileReader(taskWith("analysis_wrong.py"));
    const finding = CritiqueReply.parse({
      findings: [
        {
          type: "missing_implementation",
          severity: "likely_mismatch",
          item: "root/e1",
          trace: ["no-such-entry"],
          spec: "s",
          code: "c",
          reason: "r",
        },
      ],
    }).findings[0];
    if (!finding) throw new Error("no finding");
    expect(checkFinding(reader, finding, {}).verified).toBe(false);
  });
});

describe("critique mode", () => {
  it("default report; the stricter of the SAM and the site; approval: [critique] asks for approve", () => {
    expect(effectiveCritiqueMode({})).toBe("report");
    expect(effectiveCritiqueMode({ sam: "off" })).toBe("off");
    expect(effectiveCritiqueMode({ site: "off" })).toBe("off");
    expect(effectiveCritiqueMode({ sam: "off", site: "report" })).toBe("report");
    expect(effectiveCritiqueMode({ sam: "block", site: "approve" })).toBe("block");
    expect(effectiveCritiqueMode({ sam: "report", site: "approve" })).toBe("approve");
    expect(effectiveCritiqueMode({ sam: "off", approval: ["critique"] })).toBe("approve");
    expect(effectiveCritiqueMode({ sam: "block", approval: ["critique"] })).toBe("block");
  });
});

describe("items", () => {
  it("the example task's To-do items are t1..t5 in order", () => {
    const parsed = parseSamSync(join(REPO, "tasks", "examples", "lhco-dijet-selection", "task.md"));
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
    const items = todoItems(parsed.sam.root);
    expect(items.map((i) => i.id)).toEqual(["root/t1", "root/t2", "root/t3", "root/t4", "root/t5"]);
    expect(items[3]?.text).toBe("Veto events with a b-tagged jet among the selected jets.");
    expect(items[4]?.text).toMatch(/^Build the dijet system .* `results\/selection.json` as/);
    expect(parsed.sam.root.items.map((i) => i.id)).toEqual(["root/e1", "root/e2"]);
  });
});
