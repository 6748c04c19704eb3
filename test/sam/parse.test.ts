// What a valid SAM parses into: verbatim sections, aliases, nested and referenced sub-SAMs, checks,
// normalised metadata, hashes, and byte-identical JSON for the same input.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { samToJson } from "../../runner/sam/json.ts";
import { parseSam, parseSamString, parseSamSync } from "../../runner/sam/parse.ts";
import type { SamDocument } from "../../runner/sam/types.ts";

function parsed(text: string, file = "/virtual/task.md"): SamDocument {
  const result = parseSamString(text, file);
  if (!result.ok) throw new Error(result.diagnostics.map((d) => d.message).join("\n"));
  return result.sam;
}

const FILE_FOR_ERRORS = "/virtual/crlf.md";
const TABLE = "| a | b |\n|---|---|\n| 1 | 2 |";
const CODE = "```python\nprint('x')  # not a heading:\n# To-do\n```";

describe("sections", () => {
  it("keeps section text verbatim: code blocks, lists, tables", () => {
    const sam = parsed(
      `# Fit\n\n## Context\nIntro *emphasis*.\n\n${TABLE}\n\n## To-do\n1. First\n   - nested\n\n${CODE}\n\n## Expectation\n- Done.\n`,
    );
    expect(sam.root.title).toBe("Fit");
    expect(sam.root.context).toBe(`Intro *emphasis*.\n\n${TABLE}`);
    expect(sam.root.todo).toBe(`1. First\n   - nested\n\n${CODE}`);
    expect(sam.root.expectation).toBe("- Done.");
  });

  it("matches headings case-insensitively, with aliases", () => {
    const sam = parsed("# T\n\n## BACKGROUND\nWhy.\n\n## tasks:\nDo.\n\n## Acceptance Criteria\n- Ok.\n");
    expect([sam.root.context, sam.root.todo, sam.root.expectation]).toEqual(["Why.", "Do.", "- Ok."]);
  });

  it("takes heading text literally, but sees section names through emphasis", () => {
    const sam = parsed("# Fit *ROOT* `TH1`\n\n## **To-do**\nDo.\n\n## _Expectation:_\n- Ok.\n");
    expect(sam.root.title).toBe("Fit *ROOT* `TH1`");
    expect([sam.root.todo, sam.root.expectation]).toEqual(["Do.", "- Ok."]);
  });

  it("accepts a title that is itself a section name", () => {
    const sam = parsed("# Task\n\n## To-do\nDo.\n\n## Expectation\n- Ok.\n");
    expect(sam.root.title).toBe("Task");
  });

  it("keeps deeper sub-headings inside a section", () => {
    const sam = parsed("# T\n\n## To-do\n### Step 1\nA.\n### Step 2\nB.\n\n## Expectation\n- Ok.\n");
    expect(sam.root.todo).toBe("### Step 1\nA.\n### Step 2\nB.");
  });
});

describe("expectation items and checks", () => {
  it("turns list items into items and attaches check blocks with timeouts", () => {
    const sam = parsed(
      "# T\n\n## To-do\nDo.\n\n## Expectation\n- Output exists\n  and is fresh.\n  ```check timeout=45s\n  test -f out.txt\n  ```\n- Reviewed by hand.\n- Two checks\n  ```check\n  true\n  ```\n  ```check timeout=1m30s\n  make test\n  ```\n",
    );
    expect(sam.root.items).toEqual([
      {
        id: "root/e1",
        text: "Output exists\nand is fresh.",
        line: 7,
        checks: [{ id: "root/check-1", command: "test -f out.txt", timeoutSec: 45, line: 9 }],
      },
      { id: "root/e2", text: "Reviewed by hand.", line: 12, checks: [] },
      {
        id: "root/e3",
        text: "Two checks",
        line: 13,
        checks: [
          { id: "root/check-2", command: "true", timeoutSec: 300, line: 14 },
          { id: "root/check-3", command: "make test", timeoutSec: 90, line: 17 },
        ],
      },
    ]);
  });

  it("treats an Expectation without a list as one item", () => {
    const sam = parsed(
      "# T\n\n## To-do\nDo.\n\n## Expectation\nThe plot looks right.\n\n```check\ntest -s plot.png\n```\n",
    );
    expect(sam.root.items).toEqual([
      {
        id: "root/e1",
        text: "The plot looks right.",
        line: 7,
        checks: [{ id: "root/check-1", command: "test -s plot.png", timeoutSec: 300, line: 9 }],
      },
    ]);
  });
});

describe("sub-SAMs", () => {
  it("nests `Sub-SAM:` / `Subtask:` headings to any depth", () => {
    const sam = parsed(
      [
        "# Root",
        "## To-do\nR.",
        "## Expectation\n- R ok.",
        "## Sub-SAM: A",
        "### To-do\nA.",
        "### Expectation\n- A ok.",
        "### Subtask: A1",
        "#### To-do\nA1.",
        "#### Expectation\n- A1 ok.\n  ```check\n  true\n  ```",
        "#### Sub-task: A1a",
        "##### To-do\nA1a.",
        "##### Expectation\n- A1a ok.",
        "## Subtask: B",
        "### Todo\nB.",
        "### Expectations\n- B ok.",
      ].join("\n\n"),
    );
    const shape = (n: SamDocument["root"]): unknown => [n.id, n.title, n.children.map(shape)];
    expect(shape(sam.root)).toEqual([
      "root",
      "Root",
      [
        ["root/1", "A", [["root/1/1", "A1", [["root/1/1/1", "A1a", []]]]]],
        ["root/2", "B", []],
      ],
    ]);
    expect(sam.root.children[0]?.children[0]?.items[0]?.checks[0]?.id).toBe("root/1/1/check-1");
  });

  it("includes referenced files after nested sub-SAMs, with their own hashes", () => {
    const dir = mkdtempSync(join(tmpdir(), "sam-sub-"));
    mkdirSync(join(dir, "parts"));
    const part =
      "---\nname: part\nsubtasks: [deeper.md]\n---\n# Part\n\n## To-do\nP.\n\n## Expectation\n- P ok.\n";
    const deeper = "# Deeper\n\n## To-do\nD.\n\n## Expectation\n- D ok.\n";
    writeFileSync(join(dir, "parts", "part.md"), part);
    writeFileSync(join(dir, "parts", "deeper.md"), deeper);
    writeFileSync(
      join(dir, "task.md"),
      "---\nsubtasks: [parts/part.md]\n---\n# Root\n\n## To-do\nR.\n\n## Expectation\n- R ok.\n\n## Sub-SAM: inline\n### To-do\nI.\n### Expectation\n- I ok.\n",
    );
    const result = parseSamSync(join(dir, "task.md"));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const { root, files } = result.sam;
    expect(root.children.map((c) => [c.id, c.title, c.source.file])).toEqual([
      ["root/1", "inline", join(dir, "task.md")],
      ["root/2", "Part", join(dir, "parts", "part.md")],
    ]);
    expect(root.children[1]?.children[0]?.title).toBe("Deeper");
    expect(files.map((f) => f.file)).toEqual([
      join(dir, "task.md"),
      join(dir, "parts", "part.md"),
      join(dir, "parts", "deeper.md"),
    ]);
    expect(files[2]?.sha256).toBe(createHash("sha256").update(deeper).digest("hex"));
  });
});

describe("metadata", () => {
  it("normalises units, mounts in both forms, and keeps defaults explicit", () => {
    const sam = parsed(
      [
        "---",
        "name: fit-1",
        "group: root-fits",
        "walltime: 1h30m",
        "iterations: 12",
        "budget_usd: $2.50",
        "network: true",
        "gpu: 1",
        "cpus: 2.5",
        "memory: 512Mi",
        "scratch: 2G",
        "mounts:",
        "  - /data/run1:/data",
        "  - {host: ./ref, container: /ref, mode: rw}",
        "jobs: slurm",
        "skills: [root, slurm]",
        "image: scifi-sandbox",
        "difficulty: hard",
        "rank: {work: 2, control: 3}",
        "approval: [submit_job]",
        "allow_commands: [make, g++]",
        "keep_jobs: true",
        "---",
        "# T\n\n## To-do\nDo.\n\n## Expectation\n- Ok.",
      ].join("\n"),
    );
    expect(sam.metadata).toEqual({
      name: "fit-1",
      group: "root-fits",
      walltimeSec: 5400,
      iterations: 12,
      budgetUsd: 2.5,
      network: true,
      gpu: 1,
      cpus: 2.5,
      memoryBytes: 512 * 1024 ** 2,
      scratchBytes: 2 * 1024 ** 3,
      mounts: [
        { host: "/data/run1", container: "/data", mode: "ro", line: 13 },
        { host: "./ref", container: "/ref", mode: "rw", line: 14 },
      ],
      jobs: "slurm",
      skills: ["root", "slurm"],
      image: "scifi-sandbox",
      difficulty: "hard",
      rank: { work: 2, control: 3 },
      approval: ["submit_job"],
      checkAssets: [],
      subtasks: [],
      allowCommands: ["make", "g++"],
      keepJobs: true,
    });
  });

  it("defaults: nothing granted, name from the folder of task.md", () => {
    const sam = parsed("# T\n\n## To-do\nDo.\n\n## Expectation\n- Ok.\n", "/virtual/my-task/task.md");
    expect(sam.metadata).toEqual({
      name: "my-task",
      network: false,
      gpu: 0,
      mounts: [],
      skills: [],
      checkAssets: [],
      subtasks: [],
    });
  });
});

describe("line endings", () => {
  it("parses CRLF files like LF files, with the same positions", () => {
    const lf =
      "---\nwalltime: 2h\ncheck_assets: []\n---\n# T\n\n## To-do\nDo.\n\n## Expectation\n- Ok.\n  ```check\n  true\n  ```\n";
    const crlf = parsed(lf.replaceAll("\n", "\r\n"));
    const plain = parsed(lf);
    expect(crlf.metadata).toEqual(plain.metadata);
    expect(crlf.root.items).toEqual(plain.root.items);
    expect(crlf.root.todo).toBe("Do.");
    const multi = parsed(
      "# T\r\n\r\n## To-do\r\nx\r\n\r\n## Expectation\r\n- y\r\n  ```check\r\n  a\r\n  b\r\n  ```\r\n",
    );
    expect(multi.root.items[0]?.checks[0]?.command).toBe("a\nb");
    const bad = parseSamString("---\r\nwalltime: 9x\r\n---\r\n# T\r\n", FILE_FOR_ERRORS);
    expect(bad.diagnostics[0]).toMatchObject({ line: 2, column: 11 });
  });
});

describe("determinism and hashing", () => {
  it("gives byte-identical JSON for the same file and records the SHA-256 of its bytes", async () => {
    const file = join(import.meta.dirname, "..", "..", "tasks", "examples", "two-level-subsams", "task.md");
    const [a, b] = await Promise.all([parseSam(file), parseSam(file)]);
    if (!a.ok || !b.ok) throw new Error("example should parse");
    expect(samToJson(a.sam)).toBe(samToJson(b.sam));
    expect(a.sam.sha256).toBe(createHash("sha256").update(readFileSync(file)).digest("hex"));
    expect(a.sam.file).toBe(file);
    // Keys are sorted at every level, so the text does not depend on construction order.
    expect(samToJson(a.sam).indexOf('"file"')).toBeLessThan(samToJson(a.sam).indexOf('"metadata"'));
  });

  it("same text gives the same JSON; one changed byte changes the hash", () => {
    const text = "# T\n\n## To-do\nDo.\n\n## Expectation\n- Ok.\n";
    expect(samToJson(parsed(text))).toBe(samToJson(parsed(text)));
    expect(parsed(text).sha256).not.toBe(parsed(`${text} `).sha256);
  });
});
