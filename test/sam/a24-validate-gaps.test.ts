// A24 (a helper session attacking the check stages): compare stages and checks that `scifi
// validate` accepts today although they run the agent's file beside the hidden assets, or force their
// own success. A compare stage "starts with a check asset or a program of the image, never with an
// output" (README, Expectation items and checks); each form below runs an output as a program all
// the same: through a shell or an interpreter of the image, or as a later command of the script. The
// run-level proof is scenario A24-1 (test/run/adversarial/scenarios.ts): an adder compiled with the
// hidden testbench ends the simulation at time 0 and passes.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSamSync } from "../../runner/sam/parse.ts";

function sam(expectation: string): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-a24-validate-"));
  mkdirSync(join(dir, "checks"));
  writeFileSync(join(dir, "checks", "ref.json"), "{}");
  const file = join(dir, "task.md");
  writeFileSync(
    file,
    `---\nname: a24\nhidden_assets: [checks/ref.json]\n---\n# T\n\n## To-do\nDo.\n\n## Expectation\n${expectation}\n`,
  );
  return file;
}

function diagnostics(file: string): string {
  return parseSamSync(file)
    .diagnostics.map((d) => `${d.severity}: ${d.message}`)
    .join("\n");
}

const RUN = "- Ok.\n  ```check outputs=x.sh,solution.py,design.v\n  true\n  ```\n";

describe("A24: what validate lets through", () => {
  it("controls: the SAM is otherwise valid; an output as the first word is refused, `|| true` warned about", () => {
    const data = "- Ok.\n  ```check outputs=x.txt\n  true\n  ```\n";
    expect(diagnostics(sam(`${data}  \`\`\`compare\n  cmp outputs/x.txt checks/ref.json\n  \`\`\``))).toBe(
      "",
    );
    // An output whose name says it is code is refused even for cmp (what reads it might run it).
    expect(diagnostics(sam(`${RUN}  \`\`\`compare\n  cmp outputs/x.sh checks/ref.json\n  \`\`\``))).toMatch(
      /^error: .*an output that is code/m,
    );
    expect(diagnostics(sam(`${data}  \`\`\`compare\n  outputs/x.txt checks/ref.json\n  \`\`\``))).toMatch(
      /^error: .*runs `outputs\/x.txt`, a file the agent's work made/m,
    );
    expect(diagnostics(sam("- Ok.\n  ```check\n  cmp result.txt checks/ref.json || true\n  ```"))).toMatch(
      /exit status is forced to 0/,
    );
  });

  it.each([
    "sh outputs/x.sh checks/ref.json",
    "bash outputs/x.sh",
    "python3 outputs/solution.py checks/ref.json",
    ". outputs/x.sh",
    "source outputs/x.sh",
    "perl outputs/solution.py",
    "true; outputs/x.sh",
    "test -s checks/ref.json && outputs/x.sh",
    "env outputs/x.sh",
    "timeout 10 bash outputs/x.sh",
    "cat outputs/x.sh | sh",
    "sh < outputs/x.sh",
    'bash -c "$(cat outputs/x.sh)"',
    "cd outputs && sh x.sh",
    "iverilog -o /tmp/sim checks/ref.json outputs/design.v && vvp /tmp/sim",
  ])("refuses a compare stage that runs an output as a program: %s", (command) => {
    const text = diagnostics(sam(`${RUN}  \`\`\`compare\n  ${command}\n  \`\`\``));
    expect(text, command).toMatch(/^error: .*output/m);
  });

  it.each([
    "cmp result.txt checks/ref.json || :",
    "cmp result.txt checks/ref.json || echo mismatch",
    "if cmp result.txt checks/ref.json; then echo same; fi",
    "cmp result.txt checks/ref.json &",
    "set +e; cmp result.txt checks/ref.json; echo done",
  ])("warns where a check forces its own success: %s", (command) => {
    const text = diagnostics(sam(`- Ok.\n  \`\`\`check\n  ${command}\n  \`\`\``));
    expect(text, command).toMatch(/exit status is forced to 0/);
  });
});
