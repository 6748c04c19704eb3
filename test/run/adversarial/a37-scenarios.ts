// Issue 37, class 3: outputs whose format names the hidden reference (the a37-formats task: a naive
// grader with h5py and lxml that would read an HDF5 external link or an XML external entity as the
// agent's result; test/run/checks/output-formats.e2e.test.ts shows that it does). The runner refuses such
// outputs when it copies them out, naming each and the reference inside it; the honest agent passes.
// Run on Docker (adversarial.e2e.test.ts) and Apptainer (adversarial.inner.ts).
import { expect } from "vitest";
import { checkEvents, failedBecauseOf, passed, type Scenario } from "./workspace.ts";

export const a37Scenarios: Scenario[] = [
  {
    name: "A37 control: the honest agent's HDF5 and XML outputs pass",
    task: "a37-formats",
    agent: "a37-formats-honest.yaml",
    verify: passed,
  },
  {
    name: "A37 (held). an HDF5 external link and an XML external entity on the hidden references are refused; the compare stage never passes",
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
];
