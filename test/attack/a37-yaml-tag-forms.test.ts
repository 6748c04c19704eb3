// A37-7 (attacker on issue 37, output formats): docs/loop.md refuses YAML with `!!python/...` tags
// (pattern `!!python/`). The same tag has two other spellings YAML loaders accept: a `%TAG`
// directive (`%TAG !p! tag:yaml.org,2002:python/` then `!p!object/apply:...`) and a verbatim tag
// (`!<tag:yaml.org,2002:python/object/apply:...>`). A grader that loads the output with
// `yaml.load(f, Loader=yaml.Loader)` (or unsafe_load) runs the call; here it reads the hidden
// reference, its name split so the hidden-name search misses it. Shown with the host's PyYAML
// (scifi-sci:local has none; a scientist's image with PyYAML behaves the same).
// Broke when found (the guard passed it); fixed since, so this passes: the guard passes both. Fix: refuse `tag:yaml.org,2002:python/` (and the js/ruby
// forms) anywhere in the text, and any `%TAG` directive whose prefix names them.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { outputFormatProblem } from "../../runner/run/checks/output-formats.ts";

const call = (task: string) => `["open(\\"${task}/checks/expect\\" + \\"ed.txt\\").read()"]`;
const FORMS = {
  "TAG directive": (task: string) =>
    `%TAG !p! tag:yaml.org,2002:python/\n---\nsum: !p!object/apply:builtins.eval ${call(task)}\n`,
  "verbatim tag": (task: string) =>
    `sum: !<tag:yaml.org,2002:python/object/apply:builtins.eval> ${call(task)}\n`,
};

function hasPyYaml(): boolean {
  try {
    execFileSync("python3", ["-c", "import yaml"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("A37-7: a YAML output whose python/ tag is spelled with %TAG or as a verbatim tag", () => {
  it.skipIf(!hasPyYaml()).each(Object.entries(FORMS))(
    "%s: PyYAML's yaml.Loader runs it and returns the hidden reference",
    (_form, make) => {
      const task = mkdtempSync(join(tmpdir(), "a37-yaml-"));
      mkdirSync(join(task, "checks"));
      writeFileSync(join(task, "checks", "expected.txt"), "42.125\n");
      writeFileSync(join(task, "result.yaml"), make(task));
      const read = execFileSync(
        "python3",
        [
          "-c",
          "import sys, yaml; print(yaml.load(open(sys.argv[1]), Loader=yaml.Loader)['sum'], end='')",
          join(task, "result.yaml"),
        ],
        { encoding: "utf8" },
      );
      expect(read).toBe("42.125\n");
    },
  );

  it.each(Object.entries(FORMS))("%s: is refused when copied out", (_form, make) => {
    const problem = outputFormatProblem("out/result.yaml", Buffer.from(make("/task")), {
      hiddenNames: ["checks/expected.txt", "expected.txt"],
    });
    expect(problem).toContain("declared output out/result.yaml is refused");
  });
});
