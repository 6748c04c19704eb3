// The engine-free part of the sandbox guard (runner/sandbox/guard.ts): who a sandbox may run as, the
// lending of the task folder around a sandbox's life, and stop() clearing privilege bits. A fake
// backend stands in for the engine; the conformance suite runs the same guard on Docker and Apptainer.
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../runner/policy/spec.ts";
import { createApptainerBackend } from "../../runner/sandbox/apptainer.ts";
import { startGuarded } from "../../runner/sandbox/guard.ts";
import { QuotaExceeded, type Sandbox, SandboxError, SandboxUnavailable } from "../../runner/sandbox/types.ts";
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
      // Set-id bits cleared; group and other get no bit they lacked at the start (0644), the
      // owner's bits stay as the sandbox left them.
      expect(statSync(join(s.taskDir, "task.md")).mode & 0o7777).toBe(0o744);
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

/**
 * A sandbox whose exec understands `write NAME MiB` (at once), `grow NAME` (1 MiB every 50 ms until
 * aborted) and `wait MS`; it honours ExecOptions.signal as the real backends do (the command dies).
 */
function fileStart() {
  const start = async (s: SandboxSpec): Promise<Sandbox> => ({
    backend: "fake",
    spec: s,
    exec: async (command, options = {}) => {
      const [verb, name = "", n = "0"] = String(command).split(" ");
      const done = (exitCode: number) => ({
        exitCode,
        stdout: `${verb} ended\n`,
        stderr: "",
        timedOut: false,
        truncated: false,
        durationMs: 0,
      });
      if (verb === "write") writeFileSync(join(s.taskDir, name), Buffer.alloc(Number(n) * MiB, 1));
      if (verb === "wait") await sleep(Number(name));
      if (verb === "grow") {
        for (let i = 0; i < 2000 && !options.signal?.aborted; i++) {
          writeFileSync(join(s.taskDir, name), Buffer.alloc(MiB, 1), { flag: "a" });
          await sleep(50);
        }
        if (options.signal?.aborted) return done(137);
      }
      return done(0);
    },
    readFile: async () => Buffer.from(""),
    writeFile: async (path, data) => writeFileSync(join(s.taskDir, path), data),
    stop: async () => undefined,
  });
  return start;
}

const MiB = 1024 ** 2;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe("sandbox guard: the task-folder quota, without an engine", () => {
  const quota = { taskFolderQuota: { maxAddBytes: 8 * MiB } };

  it("an exec that goes past it fails with QuotaExceeded; the state persists until files are deleted", async () => {
    const sb = await startGuarded(spec(quota), fileStart(), { backend: "fake", pollMs: 100 });
    expect((await sb.exec("write a 4")).exitCode).toBe(0);
    await expect(sb.exec("write b 6")).rejects.toThrow(QuotaExceeded);
    expect(sb.quotaExceeded?.()?.message).toMatch(/disk quota of the task folder exceeded.*maxTaskFolder/);
    // Still over, adding nothing: runs to its end, returns, says so; not killed even past a poll period.
    const look = await sb.exec("wait 400");
    expect(look.stdout).toBe("wait ended\n");
    expect(look.stderr).toMatch(/\[scifi: disk quota of the task folder exceeded/);
    rmSync(join(sb.spec.taskDir, "b"));
    expect((await sb.exec("wait 1")).stderr).toBe("");
    expect(sb.quotaExceeded?.()).toBeUndefined();
    await sb.stop();
  });

  it("a long writer is killed by the poll, within a few poll periods of going over", async () => {
    const sb = await startGuarded(spec(quota), fileStart(), { backend: "fake", pollMs: 100 });
    const t0 = Date.now();
    await expect(sb.exec("grow big")).rejects.toThrow(/the command was killed/);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(statSync(join(sb.spec.taskDir, "big")).size).toBeLessThan(30 * MiB);
    await sb.stop();
  });

  it("writeFile past it writes nothing; a sparse file counts what it holds", async () => {
    const sb = await startGuarded(spec(quota), fileStart(), { backend: "fake" });
    await expect(sb.writeFile("big", Buffer.alloc(9 * MiB))).rejects.toThrow(/nothing was written to big/);
    expect(existsSync(join(sb.spec.taskDir, "big"))).toBe(false);
    writeFileSync(join(sb.spec.taskDir, "sparse"), "");
    truncateSync(join(sb.spec.taskDir, "sparse"), 100 * MiB);
    await sb.writeFile("ok", Buffer.alloc(MiB));
    expect((await sb.exec("wait 1")).exitCode).toBe(0);
    await sb.stop();
  });

  it("the base comes from the spec when the runner measured it at run start", async () => {
    const s = spec({ taskFolderQuota: { maxAddBytes: 8 * MiB, baseBytes: 0 } });
    writeFileSync(join(s.taskDir, "existing"), Buffer.alloc(10 * MiB, 1));
    const sb = await startGuarded(s, fileStart(), { backend: "fake" });
    await expect(sb.exec("write more 1")).rejects.toThrow(QuotaExceeded);
    await sb.stop();
  });
});
