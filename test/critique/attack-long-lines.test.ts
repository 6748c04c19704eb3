// HELD (attacker helper, issue 28; fixed on r4-fixcrit): long lines in the agent's code are bounded in count, not in size.
//
// What the docs promise (docs/critique.md): the critique gets "the cited files as the runner read them
// (numbered; whole files up to 400 lines, else windows around the citations; at most 1500 lines)";
// trust.md rule 4: "no unbounded reads or copies, nothing that can block the runner's event loop".
//
// What happened (host-side): a 2 MiB analysis.py of 40 lines of 51 KB each (a data literal, say):
// - citedCode sends all 2 MB to the critique (40 lines is "short", shown whole). A real model rejects
//   a prompt that size; the critique is then `failed` and, under `critique: block`, the PASS stands
//   (docs: a failed critique leaves the verdict), so the agent can provoke the fail-open by shape alone;
// - every citation re-normalises its span: 100 citations of lines 1-40 took 10 s of synchronous CPU on
//   the runner's event loop (2 cores shared), and again for the findings; the record grew by 18 KB a
//   citation (1.8 MB for 100; above 4 MiB the report leaves the whole Critique section out).
// A fix could cut each shown line as the record does (400 characters, said so), bound the evidence in
// characters, and normalise each file's lines once per check round.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkTrace, TaskFileReader } from "../../runner/critique/cite.ts";
import { citedCode } from "../../runner/critique/critique-pass.ts";
import type { Trace } from "../../runner/critique/schema.ts";

function wide(): { dir: string; trace: Trace } {
  const dir = mkdtempSync(join(tmpdir(), "scifi-ac-wide-"));
  writeFileSync(join(dir, "a.py"), `${Array(40).fill("x = 1 ".repeat(8600)).join("\n")}\n`);
  const refs = Array.from({ length: 100 }, () => ({ file: "a.py", line: 1, end_line: 40, quote: "y = 2" }));
  return { dir, trace: { items: [{ item: "root/t1", expression: "x", chain: [], refs }], quantities: [] } };
}

describe("held: a file of few, very long lines", () => {
  it("the critique's code evidence is bounded in characters, not only in lines", () => {
    const { dir, trace } = wide();
    const code = citedCode(new TaskFileReader(dir), trace);
    // 1500 lines of at most 400 characters and their numbers.
    expect(code.length).toBeLessThan(1500 * 420);
  });

  it("100 citations of a 2 MiB file check in well under 3 s", () => {
    const { dir, trace } = wide();
    const started = performance.now();
    checkTrace(new TaskFileReader(dir), trace);
    expect(performance.now() - started).toBeLessThan(3000);
  });
});
