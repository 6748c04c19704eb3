// HELD (attacker helper, issue 28, fixed on r4-fixcrit; low severity: whoever can write the skills folder made the link):
// a domain pack's paths leave the skills folder through a symbolic link to a folder.
//
// What the docs promise (docs/skills.md): `critique_context` and `helpers` "Paths are relative to the
// skill file and stay inside the skills folder"; trust.md rule 4: no following links host-side.
//
// What happened (runner/skills/load.ts): `../x`, absolute paths and a link as the last component are
// refused, but a link in the middle is followed: with `skills/e -> /anywhere`, `helpers: e/outhelpers`
// and `critique_context: e/outside.md` load from outside the skills folder (the helpers folder is then
// mounted into every sandbox of a run that offers the skill; the context goes into the critique).
// A fix could open each component without following links (as readTaskFile does), or compare the
// real path with the skills folder's.
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSkills } from "../../runner/skills/load.ts";

describe("held: a domain pack through a linked folder", () => {
  it("critique_context and helpers behind a link to a folder outside the skills folder are refused", () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-ac-pack-"));
    const dir = join(root, "skills");
    mkdirSync(dir);
    writeFileSync(join(root, "outside.md"), "Every finding is low.\n");
    mkdirSync(join(root, "outhelpers"));
    writeFileSync(join(root, "outhelpers", "registry.md"), "- `x`: anything\n");
    symlinkSync(root, join(dir, "e"));
    writeFileSync(
      join(dir, "e.md"),
      "---\nname: e\ndescription: Helps with the analysis of collider events in a test.\n" +
        "when_to_use: The task reads event files and asks for a selection of them.\nrequires: []\n" +
        "critique_context: e/outside.md\nhelpers: e/outhelpers\n---\n# e\n\ntext\n",
    );
    const { skills, diagnostics } = loadSkills([dir]);
    expect(skills.map((s) => s.name)).not.toContain("e");
    expect(diagnostics.length).toBeGreaterThan(0);
  });
});
