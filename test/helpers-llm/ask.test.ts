// scifi ask with a SCRIPTED model through the real gateway. The documents include the real
// `scifi --help` output (spawned), and the guard that flags invented commands is real code.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runAsk } from "../../runner/helpers/ask/command.ts";
import { citedSources, guardAnswer, mentionedCommands } from "../../runner/helpers/ask/guard.ts";
import {
  collectHelp,
  commandNames,
  type HelpText,
  sourceDocuments,
} from "../../runner/helpers/ask/sources.ts";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "helpers", "ask");

async function ask(question: string, script: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAsk(question, {
    model: `scripted:${join(FIXTURES, script)}`,
    env: { ...process.env, SCIFI_HOME: mkdtempSync(join(tmpdir(), "scifi-ask-")) },
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  });
  return { code, out: out.join(""), err: err.join("") };
}

describe("scifi ask (scripted model)", () => {
  let help: HelpText;
  beforeAll(async () => {
    help = await collectHelp();
  }, 60_000);

  it("reads the command list from the real --help, including the helpers", () => {
    const names = [...help.commands.keys()];
    for (const name of ["validate", "make-task", "oracle", "make-skill", "ask"])
      expect(names).toContain(name);
    expect(help.commands.get("oracle")).toContain("--templated");
  });

  it("draws on every document in docs/ and the README", () => {
    const ids = sourceDocuments(help, []).map((d) => d.id);
    for (const id of ["README.md", "docs/daemon.md", "docs/slurm.md", "docs/loop.md", "docs/sam-format.md"])
      expect(ids).toContain(id);
    expect([...help.commands.keys()]).toContain("memory");
  });

  it("answers with citations of provided documents and no warnings", async () => {
    const r = await ask("how do I check a task file before running it?", "cites.yaml");
    expect(r.code).toBe(0);
    expect(r.out).toContain("scifi validate tasks/fit.md");
    expect(r.out).toContain("Sources: help: scifi validate; README.md");
    expect(r.out).not.toContain("Checked against");
    expect(r.out).not.toContain("cites none");
  }, 60_000);

  it("flags a command that does not exist and an answer without sources", async () => {
    const r = await ask("how do I export a run as HTML?", "invented.yaml");
    expect(r.code).toBe(1);
    expect(r.err).toContain("flagged");
    expect(r.out).toContain("there is no `scifi export-html` command");
    expect(r.out).toContain("`validate`");
    expect(r.out).toContain("cites none of the provided documents");
  }, 60_000);
});

describe("answer guard", () => {
  it("finds commands only where the user would type them", () => {
    const text =
      "scifi runs agents. Use `scifi validate x.md` or:\n\n```sh\nnpx scifi oracle t.md --json\n$ scifi frob\n```\n";
    expect(mentionedCommands(text).sort()).toEqual(["frob", "oracle", "validate"]);
  });

  it("reads the Sources line and separates unknown ids", () => {
    expect(citedSources("x\n\n**Sources:** `README.md`; help: scifi run, docs/sam-format.md\n")).toEqual([
      "README.md",
      "help: scifi run",
      "docs/sam-format.md",
    ]);
    // Standing at the end of the answer's line, as models write it, with a closing period.
    expect(citedSources("Check it first with `scifi validate task.md`. Sources: README.md.")).toEqual([
      "README.md",
    ]);
    expect(guardAnswer("Use `scifi validate`. Sources: README.md", ["validate"], ["README.md"]).flagged).toBe(
      false,
    );
    const g = guardAnswer("Use `scifi run`.\nSources: README.md; my memory", ["run"], ["README.md"]);
    expect(g).toMatchObject({ unknownCommands: [], sources: ["README.md"], unknownSources: ["my memory"] });
    expect(g.text).toContain('Cited "my memory" is not one of the provided documents');
  });

  it("parses command names from commander help", () => {
    const help =
      "Usage: scifi\n\nCommands:\n  validate [options] <p>  Check\n                          more text\n  run <t>  Run\n  help [command]  help\n";
    expect(commandNames(help)).toEqual(["validate", "run"]);
  });
});
