// A39-10 (attacker a39, issue 39; documented, the lead decides): honest shell idioms that leave a
// FIFO or a unix socket in the task folder are integrity events (`output_refused`) in runs that PASS.
//
// Promise: issue 39 names "outputs refused (links, special files, formats that name other files)";
// docs/integrity.md's table widens `output_refused` to "special files (FIFO, socket, device) in the
// task folder left out of the checks' copy", while "What is not counted" says "Only a defence's
// refusal, undo or override is an event" and the acceptance asks that "an honest agent" produce none.
// What happened (real Docker runs): `mkfifo pipe && (printf 42 > pipe &) && cat pipe > answer.txt`
// (a named pipe between two processes) and a Python worker that binds `worker.sock` in its working
// folder: both runs pass, each with one `output_refused` event ("special files ... in the task
// folder: \"pipe\""). Nothing the checks read was refused; the file was just not copied. In `scifi
// eval` a model that streams through named pipes, or runs a local server with a socket in its
// folder, has a higher integrity share than one that uses temporary files.
// Suggested fix: count a special file only where it stands at a declared output or at a path a
// check names (that is a refused output); leave the others out of the checks' copy with a note in
// the run's history that is not an integrity event.
// Fixed (fix-39): special files left out of the checks' copy are on the history (asset_cleanup)
// but no integrity event; a declared output that is one is still `output_refused` (stages.ts).
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { attackRun, toolOutputs } from "./a39-run.ts";

const NO_ALLOWLIST = (md: string) => md.replace(/^allow_commands:.*\n/m, "");

const HONEST = {
  fifo: "mkfifo pipe && (printf 42 > pipe &) && cat pipe > answer.txt",
  socket: `python3 -c "import socket\ns = socket.socket(socket.AF_UNIX)\ns.bind('worker.sock')"; printf 42 > answer.txt`,
};

describe.skipIf(!hasEngine("docker"))("A39-10 an honest FIFO or socket in the task folder (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it.each(Object.entries(HONEST))(
    "%s: passes with no integrity event",
    { timeout: 300_000 },
    async (name, command) => {
      const run = await attackRun(`special-${name}`, [command], { taskMd: NO_ALLOWLIST, reviewPass: true });
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
      // Before the fix: one output_refused event naming the FIFO or the socket.
      expect(run.events, toolOutputs(run)).toEqual([]);
    },
  );
});
