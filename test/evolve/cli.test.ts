// `scifi evolve` through the real binary: the listing (escaped), apply with its note and record,
// reject, and the usage errors a person can make.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { homePaths } from "../../runner/paths.ts";
import { runScifi } from "../helpers/cli.ts";
import { modelRuns, writeRun } from "./corpus.ts";

const entry = (name: string) =>
  `  - name: ${name}\n    provider: anthropic\n    model: m\n    rank: 2\n    prices: { input: 0, output: 0 }\n    noApiKey: true\n`;

describe("scifi evolve (the binary)", () => {
  it("lists the statistics and proposals escaped; apply needs a note and records it; reject", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-evolve-cli-"));
    mkdirSync(homePaths(home).runs, { recursive: true });
    for (const run of [
      ...modelRuns(
        "scripted-weak",
        2,
        { passing: 0, late: 2, failing: 10 },
        { failOutput: "FAIL\x1b[2J\rall good" },
      ),
      ...modelRuns("scripted-steady", 2, { passing: 9, late: 3, failing: 0 }),
    ])
      writeRun(homePaths(home).runs, run);
    const models = `models:\n${entry("scripted-weak")}${entry("scripted-steady")}`;
    writeFileSync(join(home, "models.yaml"), models);
    writeFileSync(join(home, "work.md"), "You are the work agent.\n");

    const listed = await runScifi(home, ["evolve", "--prompt", join(home, "work.md")], 60_000);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("FAIL\\x1b[2J\\rall good");
    expect(listed.stdout).not.toContain("\x1b");
    const id = /^(demote-scripted-weak-[0-9a-f]{8}) {2}\[pending\]/m.exec(listed.stdout)?.[1];
    expect(id).toBeDefined();
    expect(listed.stdout).toContain("-    rank: 2\n    +    rank: 1");

    const noNote = await runScifi(home, ["evolve", "apply", id as string], 30_000);
    expect(noNote.code).toBe(2);
    expect(readFileSync(join(home, "models.yaml"), "utf8")).toBe(models);

    const applied = await runScifi(
      home,
      ["evolve", "apply", id as string, "--note", "weak fails rank 2"],
      30_000,
    );
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(new RegExp(`^${id}: applied by \\S+ at 20`));
    expect(readFileSync(join(home, "models.yaml"), "utf8")).toBe(models.replace("rank: 2", "rank: 1"));
    const record = JSON.parse(readFileSync(join(home, "evolve", "decisions.jsonl"), "utf8").trim()) as Record<
      string,
      string
    >;
    expect(record).toMatchObject({ id, decision: "applied", note: "weak fails rank 2" });

    const skill = /^(skill-\S+) {2}\[pending\]/m.exec(listed.stdout)?.[1] as string;
    const rejected = await runScifi(home, ["evolve", "reject", skill, "--note", "later"], 30_000);
    expect(rejected.code).toBe(0);
    const list = await runScifi(home, ["evolve", "list"], 30_000);
    expect(list.stdout).toContain(`${id}  [applied]`);
    expect(list.stdout).toContain(`${skill}  [rejected]`);
    const again = await runScifi(home, ["evolve", "reject", id as string], 30_000);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("already applied");
  }, 240_000);
});
