// AE-8, for each backend: an agent that tries to end its own sandbox (every signal to everything,
// then /tmp filled past the SAM's memory limit) must not turn its run into an infrastructure error.
// Whatever its commands end counts against them (revive.ts): the run goes on in a fresh sandbox and
// is judged by its checks. Docker's PID 1 takes no signal, so only an OOM of the whole container can
// end it; Apptainer's init (appinit) handles signals, so the TERM ends the instance every time.
import { readFileSync, writeFileSync } from "node:fs";
import { expect } from "vitest";
import { runScripted, workspace } from "./harness.ts";

export async function agentEndsItsSandbox(backend: "docker" | "apptainer"): Promise<void> {
  const ws = workspace("verilator-counter-debug");
  // 512 MiB of memory under a 1 GiB /tmp: on Docker the fill takes the container's memory.
  const sam = readFileSync(ws.sam, "utf8")
    .replace(/^memory: .*$/m, "memory: 512M")
    .replace(/^allow_commands: .*\n/m, "");
  writeFileSync(ws.sam, sam);
  const { result, history } = await runScripted(ws, "verilator-self-kill.yaml", { backend });
  const deaths = history.flatMap((e) => (e.type === "sandbox_died" ? [e] : []));
  // Every death the agent caused is recorded as such, in the work phase; none is the engine's.
  expect(deaths.every((d) => d.inside === true && d.phase === "work")).toBe(true);
  if (backend === "apptainer") expect(deaths.length).toBeGreaterThanOrEqual(1);
  else expect(deaths.length).toBeLessThanOrEqual(1);
  // Judged, and the fix after the attempts passes: no cause `sandbox`, no error.
  expect(result.outcome).toEqual({ status: "passed", reason: "every check and review item passed" });
}
