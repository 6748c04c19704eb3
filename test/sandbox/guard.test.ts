// The engine-free part of the sandbox guard (runner/sandbox/guard.ts): who a sandbox may run as, the
// lending of the task folder around a sandbox's life, and stop() clearing privilege bits. A fake
// backend stands in for the engine; the conformance suite runs the same guard on Docker and Apptainer.
import { chmodSync, mkdtempSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../runner/policy/spec.ts";
import { createApptainerBackend } from "../../runner/sandbox/apptainer.ts";
import { startGuarded } from "../../runner/sandbox/guard.ts";
import { type Sandbox, SandboxError, SandboxUnavailable } from "../../runner/sandbox/types.ts";
import { taskFolderSpec } from "../helpers/spec.ts";

const isRoot = process.getuid?.() === 0;

function spec(overrides: Partial<SandboxSpec> = {}): SandboxSpec {
  const taskDir = realpathSync(mkdtempSync(join(tmpdir(), "scifi-guard-")));
  writeFileSync(join(taskDir, "task.md"), "x");
  return taskFolderSpec({ runId: "guard-test", image: "none", taskDir }, overrides);
}

/** A sandbox that runs nothing; `during` sees the spec while it "lives". */
function fakeStart(during?: (s: SandboxSpec) => void) {
  let stopped = 0;
  const start = async (s: SandboxSpec): Promise<Sandbox> => {
    during?.(s);
    return {
      backend: "fake",
      spec: s,
      exec: async () => ({
        exitCode: 0,
        stdout: "",
        stderr: "",
        timedOut: false,
        truncated: false,
        durationMs: 0,
      }),
      readFile: async () => Buffer.from(""),
      writeFile: async () => undefined,
      stop: async () => {
        stopped++;
      },
    };
  };
  return { start, stopped: () => stopped };
}

describe("sandbox guard", () => {
  it("refuses a sandbox as uid 0", async () => {
    await expect(
      startGuarded(spec({ user: { uid: 0, gid: 0 } }), fakeStart().start, { backend: "fake" }),
    ).rejects.toThrow(SandboxError);
    await expect(
      startGuarded(spec({ user: { uid: 0, gid: 0 } }), fakeStart().start, { backend: "fake" }),
    ).rejects.toThrow(/uid 0/);
  });

  it.runIf(isRoot)(
    "refuses a backend that runs as the caller (Apptainer) when scifi runs as root, with the fix",
    async () => {
      const error = await startGuarded(spec(), fakeStart().start, {
        backend: "apptainer",
        runsAsCaller: true,
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SandboxUnavailable);
      expect((error as SandboxUnavailable).message).toMatch(/would be root/);
      expect((error as SandboxUnavailable).fix).toMatch(/normal user/);
    },
  );

  it.runIf(isRoot)("the real Apptainer backend refuses to start when scifi runs as root", async () => {
    const error = await createApptainerBackend({ sifDir: "/nonexistent" })
      .start(spec())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxUnavailable);
    expect((error as Error).message).toMatch(/scifi runs as root.*would be root/);
  });

  it.runIf(isRoot)(
    "lends the task folder to the sandbox user for its life and gives it back at stop",
    async () => {
      const s = spec();
      expect(s.user.uid).not.toBe(0);
      let during = -1;
      const fake = fakeStart((x) => {
        during = statSync(x.taskDir).uid;
      });
      const sb = await startGuarded(s, fake.start, { backend: "fake" });
      expect(during).toBe(s.user.uid);
      expect(statSync(join(s.taskDir, "task.md")).uid).toBe(s.user.uid);
      chmodSync(join(s.taskDir, "task.md"), 0o6755);
      await sb.stop();
      await sb.stop();
      expect(fake.stopped()).toBe(1);
      expect(statSync(s.taskDir).uid).toBe(0);
      expect(statSync(join(s.taskDir, "task.md")).uid).toBe(0);
      expect(statSync(join(s.taskDir, "task.md")).mode & 0o7777).toBe(0o755);
    },
  );

  it.runIf(isRoot)("gives the folder back when the backend fails to start", async () => {
    const s = spec();
    await expect(
      startGuarded(
        s,
        async () => {
          throw new SandboxError("engine down");
        },
        { backend: "fake" },
      ),
    ).rejects.toThrow("engine down");
    expect(statSync(s.taskDir).uid).toBe(0);
  });
});
