// Issue 37, class 3, on Docker: a run stage whose outputs name the hidden reference (an HDF5 whose
// dataset is an external link to /task/checks/reference.h5, an XML whose value is an external entity
// on checks/expected.txt). First the attack is shown to be real: the task's own naive grader, given
// those outputs beside the references, passes. Then the run: the outputs are refused when copied out
// (naming each output and the reference inside it) and the compare stage never passes; the honest
// agent passes. Detectors, format by format: test/run/output-formats.test.ts.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { hasEngine } from "../helpers/engines.ts";
import { checkEvents, FIXTURES, failedBecauseOf, passed, runAndVerify } from "./adversarial/workspace.ts";
import { ensureImage, IMAGE } from "./harness.ts";

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
  "outputs that name the hidden reference (docker)",
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

    it("an HDF5 external link and an XML external entity on the hidden references are refused; the compare stage fails", async () => {
      await runAndVerify(
        {
          name: "a37 links",
          task: "a37-formats",
          agent: "a37-formats-links.yaml",
          verify(run) {
            failedBecauseOf(run, "root/check-1");
            expect(checkEvents(run).some((e) => e.check === "root/check-2" && e.passed)).toBe(false);
            const output = checkEvents(run).find((e) => e.check === "root/check-1")?.output ?? "";
            expect(output).toContain(
              "scifi: declared output out/result.h5 is refused: it is HDF5 (or NetCDF-4) holding an HDF5 external link (to object /sum), naming /task/checks/reference.h5",
            );
            expect(output).toContain(
              'scifi: declared output out/result.xml is refused: it is XML holding a DOCTYPE that declares entities, naming "<!ENTITY ref SYSTEM \\"file:///task/checks/expected.txt\\""',
            );
          },
        },
        "docker",
      );
    });

    it("control: the honest agent's HDF5 and XML pass", async () => {
      await runAndVerify(
        { name: "a37 honest", task: "a37-formats", agent: "a37-formats-honest.yaml", verify: passed },
        "docker",
      );
    });
  },
);
