// The keys the critique adds: the SAM's and the site policy's `critique:` (a bad value is an error
// naming the four), `approval: [critique]`, and a skill's domain-pack paths (relative, inside the
// skills folder, holding what they name).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSitePolicy } from "../../runner/policy/site.ts";
import { parseSamString } from "../../runner/sam/parse.ts";
import { skillText } from "../../runner/skills/library.ts";
import { loadSkills, parseSkillText } from "../../runner/skills/load.ts";

const sam = (front: string) =>
  parseSamString(
    `---\nname: t\n${front}\n---\n# T\n\n## To-do\nDo.\n\n## Expectation\n- Done.\n`,
    "/v/task.md",
  );

describe("critique keys", () => {
  it("SAM: critique takes off, report, approve, block; approval takes critique", () => {
    const ok = sam("critique: block\napproval: [critique]");
    expect(ok.ok && ok.sam.metadata).toMatchObject({ critique: "block", approval: ["critique"] });
    const bad = sam("critique: strict");
    expect(bad.ok).toBe(false);
    expect(bad.diagnostics.map((d) => d.message).join("\n")).toMatch(
      /critique.*`off`, `report`, `approve` or `block`/,
    );
  });

  it("site policy: critique is validated", () => {
    expect(parseSitePolicy("critique: approve\n", "/v/site.yaml").critique).toBe("approve");
    expect(() => parseSitePolicy("critique: sometimes\n", "/v/site.yaml")).toThrow(
      /critique: must be off, report, approve or block/,
    );
  });

  it("skills: a domain pack's paths stay inside, must hold their files, and the registry joins the text", () => {
    const head = (extra: string) =>
      `---\nname: pack\ndescription: A test domain pack for the critique.\nwhen_to_use: When testing domain packs.\n${extra}\n---\n\nBody.\n`;
    const outside = parseSkillText(head("critique_context: ../secret.md"), "<text>");
    expect(outside.ok).toBe(false);
    const dir = mkdtempSync(join(tmpdir(), "scifi-pack-"));
    writeFileSync(join(dir, "pack.md"), head("critique_context: pack/critique.md\nhelpers: pack/helpers"));
    expect(loadSkills([dir]).diagnostics.map((d) => d.message)).toEqual([
      "critique_context: pack/critique.md is not a regular file beside the skill",
    ]);
    mkdirSync(join(dir, "pack", "helpers"), { recursive: true });
    writeFileSync(join(dir, "pack", "critique.md"), "Rules.\n");
    expect(loadSkills([dir]).diagnostics[0]?.message).toMatch(/pack\/helpers has no registry\.md/);
    writeFileSync(join(dir, "pack", "helpers", "registry.md"), "| helper |\n");
    const { skills, diagnostics } = loadSkills([dir]);
    expect(diagnostics).toEqual([]);
    expect(skills[0]?.critiqueContext?.text).toBe("Rules.\n");
    const text = skillText(skills, "pack");
    expect(text.text).toContain(
      "## Helper registry (mounted read-only at /opt/scifi/helpers/pack)\n\n| helper |",
    );
    expect(text.sha256).not.toBe(skills[0]?.sha256);
  });
});
