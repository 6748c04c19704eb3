// Found by the eval/import attacker session (was test/open/ae-harbor-import.pending.ts); fixed: a COPY
// through a link is refused, and asset names that are not plain words are quoted in the SAM's lists.
// AE-1..AE-3 (attacker session on issues 27/30, written from docs/import.md): hostile Harbor task
// folders that `scifi import harbor` accepts although docs/import.md promises it refuses links in
// the task folder and keeps the tests hidden from the agent.
// - AE-1: `environment/sub` is a link to a folder outside the task; `COPY sub/secret.txt /app/s.txt`
//   copies the outside file into the SAM folder (lstat checks only the last component).
//   Promise: "It also refuses ... links, devices or FIFOs in the task folder." Happened: imported.
// - AE-2: a test file named `a, input.txt` next to `a`: the hidden_assets flow list is written
//   unquoted, so it reads as `checks/harbor/tests/a`, `input.txt`; the SAM validates, the real file
//   `checks/harbor/tests/a, input.txt` is NOT hidden (the agent reads it) and the agent's own
//   starting file input.txt is hidden. Promise: "tests/ -> hidden check assets". Happened: visible.
// - AE-3: a test file named `a #x`: the import succeeds and writes a task.md whose front matter is
//   malformed YAML (a comment cuts the list). Promise: exit 2 for a malformed task, with the file.
// - AE-7 (the lead decides: a fidelity gap, not a cheat): an instruction.md holding a `# Expectation`
//   heading or a ```check fence imports with exit 0 into a task.md that does not validate (the
//   section heading inside the To-do, a check block that would never run). Promise: exit 2 with the
//   file for what cannot be imported; docs/import.md maps the instruction "verbatim".
// Fix idea: refuse test and COPY names outside [A-Za-z0-9._/-] (or quote them), and walk COPY
// sources one component at a time without following links.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HarborImportError, importHarbor } from "../../runner/import/harbor.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import { REPO } from "../run/harness.ts";

const FIXTURE = join(REPO, "test", "fixtures", "harbor", "word-count");
const root = mkdtempSync(join(tmpdir(), "ae-harbor-open-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function copy(): string {
  const dir = mkdtempSync(join(root, "task-"));
  cpSync(FIXTURE, dir, { recursive: true });
  return dir;
}

describe("scifi import harbor: hostile task folders (attacker AE-1..3, fixed)", () => {
  it("AE-1 refuses a COPY whose source passes through a link", () => {
    const dir = copy();
    writeFileSync(join(root, "secret.txt"), "TOPSECRET\n");
    symlinkSync(root, join(dir, "environment", "sub"));
    writeFileSync(
      join(dir, "environment", "Dockerfile"),
      "FROM x\nWORKDIR /app\nCOPY input.txt /app/input.txt\nCOPY sub/secret.txt /app/s.txt\n",
    );
    const out = `${dir}-out`;
    expect(() => importHarbor(dir, out)).toThrow(HarborImportError);
    expect(existsSync(join(out, "s.txt"))).toBe(false);
  });

  it("AE-2 every test file is a hidden asset, whatever its name", () => {
    const dir = copy();
    writeFileSync(join(dir, "tests", "a"), "echo\n");
    writeFileSync(join(dir, "tests", "a, input.txt"), "THE EXPECTED ANSWER\n");
    let sam: string | undefined;
    try {
      sam = importHarbor(dir, `${dir}-out`).sam;
    } catch (e) {
      expect(e).toBeInstanceOf(HarborImportError); // a precise refusal is a fix too
      return;
    }
    const parsed = parseSamSync(sam);
    if (!parsed.ok) throw new Error("the import wrote an invalid SAM instead of refusing");
    expect(parsed.sam.metadata.hiddenAssets).toContain("checks/harbor/tests/a, input.txt");
    expect(parsed.sam.metadata.hiddenAssets).not.toContain("input.txt");
  });

  it("AE-3 a test file name that breaks the YAML list is refused, not written into task.md", () => {
    const dir = copy();
    writeFileSync(join(dir, "tests", "a #x"), "echo\n");
    const out = `${dir}-out`;
    let imported = false;
    try {
      importHarbor(dir, out);
      imported = true;
    } catch (e) {
      expect(e).toBeInstanceOf(HarborImportError);
    }
    if (imported)
      expect(parseSamSync(join(out, "task.md")).ok, readFileSync(join(out, "task.md"), "utf8")).toBe(true);
  });
});
