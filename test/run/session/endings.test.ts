// One way an error ends a run: every error class that ends runs is a RunEnding by instanceof (also
// those on another base, ModelError), each gives the outcome and limit the run records, and a
// subclass's instanceof still tests its own class. What stopped a run without an outcome is typed too.
import { describe, expect, it } from "vitest";
import { ApprovalTimedOut } from "../../../runner/approval/gate.ts";
import { ReplayDivergence } from "../../../runner/llm/providers/replay.ts";
import { ScriptError } from "../../../runner/llm/scripted/script.ts";
import { BudgetExceeded, ModelsUnreachable, NoModelAvailable } from "../../../runner/llm/types.ts";
import { PolicyRefused } from "../../../runner/policy/refused.ts";
import { CopyTooLarge } from "../../../runner/run/checks/check-copy.ts";
import { Tampering } from "../../../runner/run/checks/checks.ts";
import { GrantChanged } from "../../../runner/run/gates/grant.ts";
import { runErrorKind } from "../../../runner/run/session/errors.ts";
import { SandboxLost } from "../../../runner/run/session/revive.ts";
import { AgentWorkAlive } from "../../../runner/run/session/session.ts";
import { outcomeOfEnding, RunEnding } from "../../../runner/run-ending.ts";
import { SandboxError, SandboxStartFailed, SandboxUnavailable } from "../../../runner/sandbox/types.ts";

describe("errors that end a run", () => {
  const cases: [Error, ReturnType<typeof outcomeOfEnding>][] = [
    [
      new BudgetExceeded("usd 1.00 spent"),
      { status: "failed", reason: "budget: usd 1.00 spent", limit: "budget" },
    ],
    [new NoModelAvailable("none left"), { status: "failed", reason: "no model: none left", limit: "model" }],
    [
      new ModelsUnreachable("all 500"),
      { status: "failed", reason: "no model: all 500", limit: "model", cause: "model" },
    ],
    [new ScriptError("no reply"), { status: "failed", reason: "no reply", limit: "agent_reply" }],
    [
      new SandboxLost("died twice"),
      { status: "failed", reason: "sandbox: died twice", limit: "sandbox", cause: "sandbox" },
    ],
    [new CopyTooLarge("too big"), { status: "failed", reason: "checks: too big", limit: "checks_copy" }],
    [
      new PolicyRefused("mount-outside-roots", "/x", "outside", "fix it"),
      {
        status: "failed",
        reason: "grant: policy refused [mount-outside-roots] /x: outside. fix it",
        limit: "grant",
      },
    ],
    [new Tampering([]), { status: "failed", reason: "tampering", limit: "tampering" }],
    [new AgentWorkAlive(["17"]), expect.objectContaining({ status: "failed", limit: "jobs" })],
  ];

  it.each(cases.map(([e, o]) => [e.name, e, o] as const))(
    "%s ends the run with its outcome",
    (_, error, outcome) => {
      expect(error).toBeInstanceOf(RunEnding);
      expect(outcomeOfEnding(error)).toEqual(outcome);
    },
  );

  it("an approval past its deadline ends the run blocked", () => {
    const timedOut = new ApprovalTimedOut({
      id: "r1",
      action: "finish",
      summary: "s",
      deadline: "2026-12-01T00:00:00Z",
    } as never);
    expect(timedOut).toBeInstanceOf(RunEnding);
    expect(outcomeOfEnding(timedOut)).toMatchObject({ status: "blocked", limit: "approval" });
  });

  it("instanceof of a subclass tests its own class; other errors are no RunEnding", () => {
    expect(new SandboxLost("x")).not.toBeInstanceOf(Tampering);
    expect(new Tampering([])).toBeInstanceOf(Tampering);
    expect(new GrantChanged("s", ["image"])).toBeInstanceOf(RunEnding);
    expect(new Error("x")).not.toBeInstanceOf(RunEnding);
    expect(new SandboxError("x")).not.toBeInstanceOf(RunEnding);
    expect(() => outcomeOfEnding(new Error("plain"))).toThrow(/does not end a run/);
  });

  it("says what stopped a run without an outcome by type, never by its message", () => {
    expect(runErrorKind(new SandboxStartFailed("docker: cannot create the container"))).toBe("start");
    expect(runErrorKind(new SandboxUnavailable("docker", "no engine"))).toBe("start");
    expect(runErrorKind(new ReplayDivergence("diverged at call 3" as never))).toBe("replay");
    // The words alone do not make a start failure.
    expect(runErrorKind(new Error("cannot create the container"))).toBe("other");
  });
});
