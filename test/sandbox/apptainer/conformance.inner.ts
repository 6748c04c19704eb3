// The shared conformance and escape suite (test/sandbox/conformance.ts, the same one Docker runs),
// against the real Apptainer backend, INSIDE the harness as the non-root user. Never skipped here:
// inside the harness a missing apptainer is a failure.
import { execa } from "execa";
import { createApptainerBackend, instanceName } from "../../../runner/sandbox/apptainer.ts";
import { sandboxConformance } from "../conformance.ts";
import { testImage } from "./fixtures.ts";

sandboxConformance("apptainer", () => createApptainerBackend(), {
  image: testImage(),
  skip: false,
  // No delegated cgroups for an unprivileged user: the backend caps memory with an address-space rlimit.
  memoryLimit: "allocation-fails",
  // appinit, the instance's init, handles signals: `kill -TERM 1` inside ends the instance.
  initTakesSignals: true,
  exists: async (runId) => {
    const r = await execa("apptainer", ["instance", "list", "--json"]);
    const list = JSON.parse(r.stdout) as { instances?: { instance: string }[] };
    return (list.instances ?? []).some((i) => i.instance === instanceName(runId));
  },
});
