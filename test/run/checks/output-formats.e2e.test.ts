// Issue 37, class 3: the attack of the a37 scenarios is real. The a37-formats task's own naive
// grader, given the attacker's outputs (an HDF5 whose dataset is an external link to
// /task/checks/reference.h5, an XML whose value is an external entity on checks/expected.txt)
// beside the references, passes without the work. The runs themselves, where the runner refuses
// those outputs and the honest agent passes, are scenarios of the adversarial suites on Docker and
// Apptainer (test/run/adversarial/a37-scenarios.ts). Detectors: test/run/checks/output-formats.test.ts.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { hasEngine } from "../../helpers/engines.ts";
import { FIXTURES } from "../adversarial/workspace.ts";
import { ensureImage, IMAGE } from "../harness.ts";

const TASK = join(FIXTURES, "a37-formats");

/** The solve.py a scripted agent writes. */
function agentSolve(agent: string): string {
  const script = parse(readFileSync(join(FIXTURES, "agents", agent), "utf8")) as {
    work: { tool_calls?: { name: string; input: { content?: string } }[] }[];
  };
  const write = script.work.flatMap((s) => s.tool_calls ?? []).find((c) => c.name === "write_file");
  if (!write?.input.content) throw new Error(`${agent}: no write_file`);
  return write.input.content;
}

describe.skipIf(!hasEngine("docker"))(
  "outputs that name the hidden reference: the attack is real (docker)",
  { timeout: 240_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("the attack is real: the naive grader passes on the attacker's outputs when nothing refuses them", () => {
      const root = mkdtempSync(join(tmpdir(), "scifi-a37-real-"));
      const task = join(root, "task");
      cpSync(TASK, task, { recursive: true });
      writeFileSync(join(task, "solve.py"), agentSolve("a37-formats-links.yaml"));
      mkdirSync(join(task, "outputs"));
      const uid = `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`;
      const script =
        "cd /task && python3 solve.py && cp -r out outputs/ && python3 checks/grade.py outputs/out/result.h5 outputs/out/result.xml checks/reference.h5 checks/expected.txt";
      const out = execFileSync(
        "docker",
        ["run", "--rm", "--network", "none", "-u", uid, "-v", `${task}:/task`, IMAGE, "bash", "-c", script],
        {
          encoding: "utf8",
        },
      );
      expect(out).toContain("hdf5 ok, xml ok");
    });
  },
);
