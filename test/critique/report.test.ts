// The report's Critique section, host-side: model text (a trace's chain, a finding's reason, a quote
// that is not on its line) is shown escaped, ESC and bidi controls as visible escapes; verified and
// unverified findings are apart; the summary counts the last critique of each node.
import { describe, expect, it } from "vitest";
import type { CritiqueRecord } from "../../runner/critique/schema.ts";
import { critiqueSection, likelyMismatches } from "../../runner/report/critique-html.ts";

const hostile = "<script>alert(1)</script>\u001b[2J\u202e";

function record(iteration: number, verified: boolean): CritiqueRecord {
  const citation = { file: "analysis.py", line: 3, quote: `import ${hostile}` };
  const check = verified
    ? { citation, verified: true, lines: [{ n: 3, text: `import ${hostile}` }] }
    : { citation, verified: false, problem: "the quoted expression is not on the cited line(s)" };
  return {
    version: 1,
    iteration,
    node: "root",
    mode: "report",
    packs: ["lhco"],
    trace: {
      items: [{ item: "root/t1", expression: `x ${hostile}`, chain: [`a -> ${hostile}`], refs: [citation] }],
      quantities: [],
    },
    traceChecks: { "item:root/t1": [check] },
    findings: [
      {
        type: "definition_mismatch",
        severity: "likely_mismatch",
        item: "root/t1",
        trace: ["root/t1"],
        spec: "s",
        code: "c",
        reason: `reason ${hostile}`,
        refs: [],
        citations: [check],
        verified,
      },
    ],
    effect: "none",
  };
}

describe("report: the Critique section", () => {
  it("escapes every model string and shows control characters as escapes", () => {
    const page = critiqueSection({ records: [record(1, true)], problems: [] }).value;
    expect(page).not.toContain("<script>");
    expect(page).not.toContain("\u001b");
    expect(page).not.toContain("\u202e");
    expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(page).toContain("   3| import &lt;script&gt;");
    expect(page).toMatch(
      /Findings on verified code<\/h4><ul class="findings"><li class="finding likely_mismatch">/,
    );
  });

  it("keeps unverified findings apart and counts the last critique of each node", () => {
    const page = critiqueSection({ records: [record(1, true), record(2, false)], problems: [] }).value;
    const second = page.slice(page.indexOf('id="critique-2"'));
    expect(second).toMatch(/Findings on verified code<\/h4><p class="muted">\(none\)<\/p>/);
    expect(second).toContain("quoted: <code>import &lt;script&gt;");
    expect(likelyMismatches([record(1, true), record(2, false)])).toEqual({ likely: 0, unverified: 1 });
    expect(page).toContain("0 verified likely mismatch(es), 1 unverified finding(s)");
  });
});
