// The malformed corpus: every test/fixtures/sam/malformed/NAME.md must be rejected with exactly the
// diagnostics in NAME.expected.txt (paths relative to test/fixtures/sam, one formatted line each).
// Files under malformed/parts/ are sub-SAMs referenced by the corpus, not cases of their own.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatDiagnostic } from "../../runner/sam/diagnostics.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";

const fixtures = join(import.meta.dirname, "..", "fixtures", "sam");
const malformed = join(fixtures, "malformed");
const cases = readdirSync(malformed)
  .filter((f) => f.endsWith(".md"))
  .sort();

describe("malformed SAM corpus", () => {
  it("holds at least 25 cases, each with its expected diagnostics", () => {
    expect(cases.length).toBeGreaterThanOrEqual(25);
    const expectations = readdirSync(malformed).filter((f) => f.endsWith(".expected.txt"));
    expect(expectations.sort()).toEqual(cases.map((c) => c.replace(/\.md$/, ".expected.txt")));
  });

  it.each(cases)("%s", (name) => {
    const result = parseSamSync(join(malformed, name));
    const actual = result.diagnostics
      .map((d) => `${formatDiagnostic(d).replaceAll(`${fixtures}/`, "")}\n`)
      .join("");
    const expected = readFileSync(join(malformed, name.replace(/\.md$/, ".expected.txt")), "utf8");
    expect(result.ok).toBe(false);
    expect(expected).not.toBe("");
    expect(actual).toBe(expected);
  });
});
