// `scifi validate` warns (never errors) when allow_commands names a shell, an interpreter, or a
// program the bash tool refuses anyway; the shipped examples list none.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type ValidateOutcome, validatePaths } from "../../runner/sam/validate.ts";

function validate(path: string): { outcome: ValidateOutcome; out: string } {
  let out = "";
  const sink = { write: (text: string) => (out += text) };
  const outcome = validatePaths([path], { json: false, out: sink, err: sink });
  return { outcome, out };
}

function sam(allow: string): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-allow-"));
  const file = join(dir, "task.md");
  writeFileSync(
    file,
    `---\nname: allow-test\ngroup: g\niterations: 1\nbudget_usd: 1\nallow_commands: ${allow}\n---\n# T\n\n## To-do\nWrite out.txt.\n\n## Expectation\n- out.txt exists.\n  \`\`\`check timeout=30s\n  test -f out.txt\n  \`\`\`\n`,
  );
  return file;
}

describe("allow_commands warnings", () => {
  it("warns at the entry for a shell, an interpreter and a refused runner; the SAM stays valid", () => {
    const file = sam("[make, sh, python3, sudo]");
    const { outcome, out } = validate(file);
    expect(outcome).toBe("valid");
    expect(out).toContain(
      `${file}:6:24: warning: allow_commands lists the shell 'sh': allowing it allows everything it can run.`,
    );
    expect(out).toContain("lists the interpreter 'python3': allowing it allows everything it can run");
    expect(out).toContain("List a script by its path (./analyse.py");
    expect(out).toContain("lists 'sudo', which runs other programs in ways the allowlist does not read");
    expect(out).not.toContain("'make'");
  });

  it("accepts exact paths and says nothing about ordinary programs", () => {
    const { outcome, out } = validate(sam("[make, ./stats, /tmp/tb/tb_counter]"));
    expect(outcome).toBe("valid");
    expect(out).not.toContain("warning");
  });

  it("the shipped examples list no shell or interpreter", () => {
    const { outcome, out } = validate(join(import.meta.dirname, "..", "..", "tasks", "examples"));
    expect(outcome).toBe("valid");
    expect(out).not.toContain("warning: allow_commands");
  });
});
