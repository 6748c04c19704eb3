// The one conformance and escape suite every sandbox backend must pass, for real (no mocks).
// A backend's test file calls `sandboxConformance(name, makeBackend, options)`; see docker.test.ts.
// Each escape test tries to get out and must fail; positive controls prove the probes themselves work.
// (Over 500 lines: one suite every backend runs, so one file; each describe block is one contract.)
import { execFileSync } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PolicyRefused } from "../../runner/policy/refused.ts";
import { resolveSpec } from "../../runner/policy/resolve.ts";
import { BUILTIN_SITE_POLICY } from "../../runner/policy/site.ts";
import { type SandboxSpec, TASK_MOUNT } from "../../runner/policy/spec.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import {
  PathRefused,
  QuotaExceeded,
  type Sandbox,
  type SandboxBackend,
  SandboxError,
  TRUNCATION_MARKER,
} from "../../runner/sandbox/types.ts";
import { taskFolderSpec } from "../helpers/spec.ts";
import { ownersAndHostView } from "./conformance-owners.ts";

export interface ConformanceOptions {
  /** Image the sandboxes run (needs sh, bash, coreutils, grep, util-linux: `scifi-base:bookworm` has them). */
  image: string;
  /** Skip the whole suite (use `!hasEngine(...)`, which throws instead when CI requires the engine). */
  skip?: boolean;
  /**
   * A folder the test process and the backend see at the SAME path: task folders, host marker files
   * and the fake runner home are made under it. Default: the OS temp folder. A backend that runs
   * inside a harness container bind-mounts a shared folder at an identical path and names it here.
   */
  sharedRoot?: string;
  /** Host addresses a sandbox could try to reach the test's TCP listener on. Default: every local IPv4. */
  hostAddresses?: string[];
  /** Whether a network-granted sandbox can reach the host listener (the positive control). Default true. */
  networkControl?: boolean;
  /** The image `network: true` sandboxes use (Docker's egress filter needs iptables in it). */
  networkImage?: string;
  /** Whether the sandbox named `runId` still exists in the engine (checked after stop()). */
  exists?: (runId: string) => Promise<boolean>;
  /** Extra spec fields every sandbox in the suite gets (e.g. labels, env). */
  specDefaults?: Partial<SandboxSpec>;
  /**
   * How the backend enforces `memoryBytes`: `oom-kill` (a cgroup limit: the process is killed, exit
   * 137; Docker) or `allocation-fails` (an address-space rlimit: the allocation fails and the program
   * exits with its own error; unprivileged Apptainer without delegated cgroups). Default `oom-kill`.
   */
  memoryLimit?: "oom-kill" | "allocation-fails";
  /**
   * The sandbox's PID 1 handles signals, so its own processes can end it (Apptainer's appinit):
   * the backend must then say so (Sandbox.endedFromInside). Default: it handles none (Docker).
   */
  initTakesSignals?: boolean;
}

const MiB = 1024 ** 2;

export function sandboxConformance(
  backendName: string,
  makeBackend: () => SandboxBackend | Promise<SandboxBackend>,
  options: ConformanceOptions,
): void {
  describe.skipIf(options.skip ?? false)(`sandbox conformance: ${backendName}`, () => {
    const root = options.sharedRoot ?? tmpdir();
    let backend: SandboxBackend;
    let workspace: string;
    const started: Sandbox[] = [];

    beforeAll(async () => {
      backend = await makeBackend();
      workspace = mkdtempSync(join(root, "scifi-conf-"));
    }, 900_000); // makeBackend may build an image first

    afterAll(async () => {
      await Promise.allSettled(started.map((s) => s.stop()));
      if (workspace) rmSync(workspace, { recursive: true, force: true });
    });

    /** A fresh task folder holding a SAM file, and a spec granting only that (plus `extra`). */
    function newSpec(extra: Partial<SandboxSpec> = {}): SandboxSpec {
      const taskDir = mkdtempSync(join(workspace, "task-"));
      writeFileSync(join(taskDir, "task.md"), "---\nname: conformance\n---\n# To-do\nnothing\n");
      const runId = `conf-${randomUUID().slice(0, 8)}`;
      return taskFolderSpec(
        { runId, image: options.image, taskDir, samFile: true },
        { labels: { "scifi.test": "conformance" }, ...options.specDefaults, ...extra },
      );
    }

    async function start(
      extra: Partial<SandboxSpec> = {},
      adjust?: (spec: SandboxSpec) => void,
    ): Promise<Sandbox> {
      const spec = newSpec(extra);
      adjust?.(spec);
      const sandbox = await backend.start(spec);
      started.push(sandbox);
      return sandbox;
    }

    describe("exec", () => {
      let sb: Sandbox;
      beforeAll(async () => {
        sb = await start();
      });

      it("runs an argv as is and a string as a shell script", async () => {
        const argv = await sb.exec(["echo", "a b", "$HOME"]);
        expect(argv.stdout).toBe("a b $HOME\n");
        const script = await sb.exec("x=41; echo $((x + 1)) | tr 4 z");
        expect(script).toMatchObject({
          exitCode: 0,
          stdout: "z2\n",
          stderr: "",
          timedOut: false,
          truncated: false,
        });
      });

      it("starts in the task folder, or in cwd when given", async () => {
        expect((await sb.exec("pwd")).stdout).toBe(`${TASK_MOUNT}\n`);
        expect((await sb.exec("pwd", { cwd: "/tmp" })).stdout).toBe("/tmp\n");
      });

      it("passes env and keeps stdout and stderr apart", async () => {
        const r = await sb.exec('echo "out:$GREETING"; echo "err:$GREETING" >&2', {
          env: { GREETING: "hi there" },
        });
        expect(r.stdout).toBe("out:hi there\n");
        expect(r.stderr).toBe("err:hi there\n");
      });

      it("feeds stdin, also large and binary-safe", async () => {
        expect((await sb.exec(["cat"], { stdin: "line 1\nline 2\n" })).stdout).toBe("line 1\nline 2\n");
        const big = randomBytes(3 * MiB);
        const r = await sb.exec(["sha256sum"], { stdin: big });
        expect(r.stdout.split(" ")[0]).toBe(sha256(big));
      });

      it("reports exit codes as results, not errors", async () => {
        expect((await sb.exec("exit 3")).exitCode).toBe(3);
        expect((await sb.exec(["false"])).exitCode).toBe(1);
        const missing = await sb.exec(["no-such-program-scifi"]);
        expect(missing.exitCode).toBe(127);
        expect(missing.timedOut).toBe(false);
      });

      it("caps output with the truncation marker and counts it as truncated", async () => {
        const r = await sb.exec(
          "head -c 300000 /dev/zero | tr '\\0' a; head -c 5000 /dev/zero | tr '\\0' b >&2",
          {
            maxOutputBytes: 1000,
          },
        );
        expect(r.truncated).toBe(true);
        expect(r.stdout).toBe("a".repeat(1000) + TRUNCATION_MARKER);
        expect(r.stderr).toBe("b".repeat(1000) + TRUNCATION_MARKER);
        expect(r.exitCode).toBe(0);
        const small = await sb.exec("echo fits", { maxOutputBytes: 1000 });
        expect(small).toMatchObject({ stdout: "fits\n", truncated: false });
      });

      it("kills a process at its timeout, also one that ignores TERM, and reports timedOut", async () => {
        const t0 = Date.now();
        const r = await sb.exec("trap '' TERM; echo $$ > /tmp/victim.pid; while :; do sleep 1; done", {
          timeoutMs: 1000,
        });
        expect(r.timedOut).toBe(true);
        expect(Date.now() - t0).toBeLessThan(30_000); // generous: a loaded engine reports exits late
        const check = await sb.exec(alive("/tmp/victim.pid"));
        expect(check.stdout).toBe("gone\n");
      });

      it("also kills children that left the process group (setsid) when the exec times out", async () => {
        const r = await sb.exec(
          "setsid sh -c 'echo $$ > /tmp/escapee.pid; exec sleep 1000' & sleep 0.3; while :; do sleep 1; done",
          { timeoutMs: 1500 },
        );
        expect(r.timedOut).toBe(true);
        const check = await sb.exec(alive("/tmp/escapee.pid"));
        expect(check.stdout).toBe("gone\n");
      });

      it("does not report a quick failing command as a timeout", async () => {
        const r = await sb.exec("kill -KILL $$", { timeoutMs: 10_000 });
        expect(r.exitCode).toBe(137);
        expect(r.timedOut).toBe(false);
      });
    });

    describe("files", () => {
      let sb: Sandbox;
      beforeAll(async () => {
        sb = await start();
      });

      it("round-trips text and binary files in the task folder and elsewhere", async () => {
        const bytes = randomBytes(256 * 1024);
        for (const path of [`${TASK_MOUNT}/out/data.bin`, "/tmp/data.bin", "rel/data.bin"]) {
          await sb.writeFile(path, bytes);
          expect(sha256(await sb.readFile(path))).toBe(sha256(bytes));
          const inside = await sb.exec(["sha256sum", path]);
          expect(inside.stdout.split(" ")[0]).toBe(sha256(bytes));
        }
        await sb.writeFile("/tmp/note.txt", "hello ünïcode\n");
        expect((await sb.readFile("/tmp/note.txt")).toString("utf8")).toBe("hello ünïcode\n");
      });

      it("writes task files the sandbox sees and files the sandbox writes are readable", async () => {
        await sb.exec("printf made-inside > /task/inside.txt");
        expect((await sb.readFile("inside.txt")).toString()).toBe("made-inside");
        expect(readFileSync(join(sb.spec.taskDir, "inside.txt"), "utf8")).toBe("made-inside");
      });

      it("fails clearly on a missing file", async () => {
        await expect(sb.readFile("/task/nope.txt")).rejects.toThrow(/nope\.txt/);
        await expect(sb.readFile("/tmp/nope.txt")).rejects.toThrow(/nope\.txt/);
      });
    });

    describe("lifecycle", () => {
      it("stop() is idempotent, cleans up, and the sandbox refuses work afterwards", async () => {
        const sb = await start();
        expect((await sb.exec("echo up")).stdout).toBe("up\n");
        await sb.stop();
        await sb.stop();
        await expect(sb.exec("echo again")).rejects.toThrow(SandboxError);
        if (options.exists) expect(await options.exists(sb.spec.runId)).toBe(false);
      });

      // AE-8: a sandbox the agent can end turns the agent's failure into an infrastructure error.
      it("kill -9 -1, SIGKILL and SIGSTOP to PID 1 and a ptrace of it leave the sandbox running", async () => {
        const sb = await start();
        // /tmp does not survive a restart: the marker shows the sandbox lived on, not came back.
        expect((await sb.exec("echo here > /tmp/marker && echo ok")).stdout).toBe("ok\n");
        const killers = [
          "kill -9 -1",
          "kill -s KILL 1; kill -s STOP 1; kill -9 -1",
          // gdb-style: attach to PID 1 to make it exit (python3 ctypes ptrace, PTRACE_ATTACH = 16)
          `python3 -c 'import ctypes; print(ctypes.CDLL(None, use_errno=True).ptrace(16, 1, 0, 0))' || true`,
        ];
        for (const killer of killers) await sb.exec(killer, { timeoutMs: 20_000 });
        const after = await sb.exec("cat /tmp/marker; cat /proc/1/environ >/dev/null 2>&1 || echo closed");
        expect(after.stdout).toBe("here\nclosed\n");
        if (sb.alive) expect(await sb.alive()).toBe(true);
      });

      it(
        options.initTakesSignals
          ? "a handled signal to PID 1 ends the sandbox, which then says it ended from inside"
          : "no signal to PID 1 ends the sandbox (its init handles none and is not the agent's)",
        async () => {
          const sb = await start();
          const signals = "for s in TERM INT HUP QUIT USR1 USR2 ALRM PIPE; do kill -s $s 1; done; sleep 1";
          await sb.exec(signals, { timeoutMs: 20_000 });
          if (options.initTakesSignals) {
            await expect.poll(() => sb.alive?.(), { timeout: 10_000 }).toBe(false);
            expect(await sb.endedFromInside?.()).toBe(true);
          } else {
            expect((await sb.exec("echo up")).stdout).toBe("up\n");
            if (sb.alive) expect(await sb.alive()).toBe(true);
          }
        },
      );

      it("orphans the agent leaves are reaped, so they take no pid for long", async () => {
        const sb = await start();
        const zombies = "grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l";
        const r = await sb.exec(`for i in $(seq 30); do (sleep 0.1 &); done; sleep 2; ${zombies}`, {
          timeoutMs: 20_000,
        });
        expect(r.stdout.trim()).toBe("0");
      });
    });

    // ---------------------------------------------------------------------------------------------
    // stop() ends everything (trust.md rule 1: a phase ends its sandbox). The runner checks each
    // iteration in a fresh sandbox; that is only worth it if nothing of the work sandbox lives on.
    describe("stop() ends every process and /tmp (a phase ends its sandbox)", () => {
      /** Detached writers of three kinds, each appending to its own file in /task every 0.2 s. */
      function survivors(token: string): string {
        const loop = (file: string) => `: ${token}; while :; do date >> /task/${file}; sleep 0.2; done`;
        return [
          // nohup'd into its own session
          `setsid nohup sh -c '${loop("alive")}' >/dev/null 2>&1 &`,
          // a double-forked daemon: its parent exits at once, it is re-parented to init
          `setsid sh -c '( ${loop("daemon")} ) </dev/null >/dev/null 2>&1 & exit 0' </dev/null >/dev/null 2>&1 &`,
          // one that ignores TERM, HUP and INT
          `setsid sh -c 'trap "" TERM HUP INT; ${loop("stubborn")}' </dev/null >/dev/null 2>&1 &`,
          "sleep 0.5; echo planted",
        ].join("\n");
      }
      const files = ["alive", "daemon", "stubborn"];
      const sizes = (taskDir: string) => files.map((f) => fileSize(join(taskDir, f)));

      it("after stop() no detached, double-forked or TERM-ignoring process writes or exists on the host", async () => {
        const sb = await start();
        const token = `scifi-survivor-${randomUUID()}`;
        const planted = await sb.exec(survivors(token), { timeoutMs: 20_000 });
        expect(planted).toMatchObject({ exitCode: 0, stdout: "planted\n", timedOut: false });
        // Positive controls: all three write while the sandbox runs, and the host sees them.
        const before = sizes(sb.spec.taskDir);
        await sleepMs(800);
        const during = sizes(sb.spec.taskDir);
        for (const [i, file] of files.entries()) expect(during[i], file).toBeGreaterThan(before[i] ?? 0);
        expect(hostProcessesWith(token).length).toBeGreaterThanOrEqual(3);

        await sb.stop();
        const afterStop = sizes(sb.spec.taskDir);
        await sleepMs(1500);
        expect(sizes(sb.spec.taskDir), "a process still writes to the task folder after stop()").toEqual(
          afterStop,
        );
        expect(hostProcessesWith(token), "processes left on the host after stop()").toEqual([]);
      });

      it("a fresh sandbox of the same spec after stop() sees an empty /tmp and none of the old processes", async () => {
        const spec = newSpec();
        const a = await backend.start(spec);
        started.push(a);
        const token = `scifi-leftover-${randomUUID()}`;
        const plant = await a.exec(
          [
            `echo ${token} > /tmp/${token}`,
            `echo ${token} > /var/tmp/${token} 2>/dev/null || true`,
            `echo ${token} > /dev/shm/${token} 2>/dev/null || true`,
            `setsid nohup sh -c ': ${token}; while :; do sleep 1; done' >/dev/null 2>&1 &`,
            `setsid sh -c 'trap "" TERM HUP INT; : ${token}; while :; do sleep 0.2; done' </dev/null >/dev/null 2>&1 &`,
            `sleep 0.3; cat /tmp/${token}`,
          ].join("\n"),
          { timeoutMs: 20_000 },
        );
        expect(plant.stdout).toBe(`${token}\n`);
        expect(hostProcessesWith(token).length).toBeGreaterThanOrEqual(2); // the probe sees them
        await a.stop();

        const b = await backend.start(spec);
        started.push(b);
        try {
          const tmp = await b.exec("ls -A /tmp");
          expect(tmp).toMatchObject({ exitCode: 0, stdout: "" });
          const elsewhere = await b.exec(
            `for d in /tmp /var/tmp /dev/shm; do ls -A "$d" 2>/dev/null; done | grep -c -- ${token}; true`,
          );
          expect(elsewhere.stdout.trim()).toBe("0");
          // Inside B: no process of A (their command lines carry the token; matched here, so
          // that the listing's own command line does not).
          const inside = await b.exec(
            `for p in /proc/[0-9]*; do tr '\\0' ' ' < "$p/cmdline" 2>/dev/null; echo; done`,
          );
          expect(inside.stdout).toMatch(/\S/); // the listing works: it sees at least itself
          expect(inside.stdout.split("\n").filter((l) => l.includes(token))).toEqual([]);
          expect(hostProcessesWith(token), "processes of sandbox A still on the host").toEqual([]);
        } finally {
          await b.stop();
        }
      });
    });

    // --- Issue 14: never root, no privilege leaves, hostile files cannot stall the runner, disk quota.
    describe("privileges, hostile files and the task-folder quota", () => {
      it("never runs as uid 0, and setuid/setgid bits set inside are cleared on the host at stop", async () => {
        let ownerBefore = statSync(workspace);
        let samBefore = ownerBefore;
        const sb = await start({}, (spec) => {
          ownerBefore = statSync(spec.taskDir);
          samBefore = statSync(join(spec.taskDir, "task.md"));
        });
        const taskDir = sb.spec.taskDir;
        expect((await sb.exec(["id", "-u"])).stdout.trim()).not.toBe("0");
        const r = await sb.exec(
          "cp /bin/true /task/suid && chmod 4755 /task/suid && mkdir /task/d && cp /bin/true /task/d/sgid && chmod 2755 /task/d/sgid && chmod g+s /task/d",
        );
        expect(r.exitCode, r.stderr).toBe(0);
        // Positive control: the bits really are set on the host while the sandbox lives.
        const privileged = (f: string) => (lstatSync(join(taskDir, f)).mode & 0o6000) !== 0;
        expect(privileged("suid")).toBe(true);
        expect(privileged("d/sgid")).toBe(true);
        await sb.stop();
        for (const f of ["suid", "d/sgid", "d", "."]) expect(privileged(f), f).toBe(false);
        expect(lstatSync(join(taskDir, "suid")).mode & 0o777).toBe(0o755);
        // The task folder ends owned as before; what the sandbox made goes to the folder's owner.
        expect(statSync(taskDir).uid).toBe(ownerBefore.uid);
        expect(statSync(join(taskDir, "task.md")).uid).toBe(samBefore.uid);
        expect(statSync(join(taskDir, "suid")).uid).toBe(ownerBefore.uid);
        expect(statSync(join(taskDir, "d", "sgid")).gid).toBe(ownerBefore.gid);
      });

      it("setuid bits set in a read-write declared mount are cleared at stop too", async () => {
        const data = mkdtempSync(join(workspace, "rw-data-"));
        chmodSync(data, 0o777); // writable by the sandbox user (65534 when the suite runs as root)
        const sb = await start({}, (spec) =>
          spec.mounts.push({ source: data, target: "/data", readOnly: false, reason: "declared mount" }),
        );
        const r = await sb.exec("cp /bin/true /data/s && chmod 4755 /data/s && stat -c %a /data/s");
        expect(r.stdout, r.stderr).toBe("4755\n");
        await sb.stop();
        expect(lstatSync(join(data, "s")).mode & 0o7777).toBe(0o755);
      });

      it("file tools refuse FIFOs, sockets, devices and pseudo-files at once, without blocking the runner", async () => {
        const sb = await start();
        const taskDir = sb.spec.taskDir;
        expect(
          (await sb.exec("mkfifo /task/fifo /tmp/fifo && mkdir /task/sub && mkfifo /task/sub/f")).exitCode,
        ).toBe(0);
        const sock = createServer().listen(join(taskDir, "sock"));
        await new Promise((done) => sock.once("listening", done));
        if (process.getuid?.() === 0) execFileSync("mknod", [join(taskDir, "zero"), "c", "1", "5"]);
        let worstGap = 0;
        let last = performance.now();
        const ticker = setInterval(() => {
          const now = performance.now();
          worstGap = Math.max(worstGap, now - last);
          last = now;
        }, 20);
        const prompt = async (what: string, call: () => Promise<unknown>) => {
          const t0 = performance.now();
          const error = await call().then(
            () => undefined,
            (e: unknown) => e,
          );
          // A contract error that says why, never an engine or errno error.
          expect(error, what).toBeInstanceOf(SandboxError);
          expect((error as Error).message, what).toMatch(/not a regular file|pseudo-file|device/);
          expect(performance.now() - t0, what).toBeLessThan(2000);
        };
        try {
          for (const path of [
            "/dev/zero",
            "/dev/urandom",
            "/proc/self/environ",
            "/proc/self/mem",
            "/sys/kernel/mm",
          ])
            await prompt(`readFile ${path}`, () => sb.readFile(path));
          for (const path of ["fifo", "/task/fifo", "sub/f", "/tmp/fifo", "sock", "/task/sock"])
            await prompt(`readFile ${path}`, () => sb.readFile(path));
          if (process.getuid?.() === 0)
            await prompt("readFile zero (a device node)", () => sb.readFile("zero"));
          for (const path of ["fifo", "sub/f", "sock"])
            await prompt(`writeFile ${path}`, () => sb.writeFile(path, "x"));
        } finally {
          clearInterval(ticker);
          sock.close();
        }
        expect(worstGap).toBeLessThan(1000);
        await sb.stop(); // walks (owners, bits) pass the FIFO and the socket without opening them
      });

      it("a 3 GiB sparse file stays sparse on the host and a read of it is refused, not loaded", async () => {
        const sb = await start({ taskFolderQuota: { maxAddBytes: 64 * MiB } });
        const r = await sb.exec("truncate -s 3G /task/sparse && echo end >> /task/sparse");
        expect(r.exitCode, r.stderr).toBe(0); // not over the quota: it holds a few KiB
        const st = statSync(join(sb.spec.taskDir, "sparse"));
        expect(st.size).toBeGreaterThan(3 * 1024 * MiB);
        expect(st.blocks * 512).toBeLessThan(MiB);
        await expect(sb.readFile("sparse")).rejects.toThrow(/larger than/);
        await sb.stop();
        expect(statSync(join(sb.spec.taskDir, "sparse")).blocks * 512).toBeLessThan(MiB);
      });

      it("the task-folder quota: a write past it fails with the message, a long dd is killed, deleting recovers", async () => {
        const sb = await start({ taskFolderQuota: { maxAddBytes: 8 * MiB } });
        const taskDir = sb.spec.taskDir;
        await expect(sb.writeFile("big.bin", randomBytes(16 * MiB))).rejects.toThrow(QuotaExceeded);
        await expect(sb.writeFile("big.bin", randomBytes(16 * MiB))).rejects.toThrow(/maxTaskFolder/);
        expect(existsSync(join(taskDir, "big.bin"))).toBe(false);
        await sb.writeFile("small.bin", randomBytes(MiB)); // under it: fine
        expect((await sb.exec("head -c 2M /dev/urandom > /task/a && echo ok")).stdout).toBe("ok\n");
        await expect(sb.exec("head -c 16M /dev/urandom > /task/b")).rejects.toThrow(QuotaExceeded);
        expect(sb.quotaExceeded?.()).toBeInstanceOf(QuotaExceeded);
        // Still over: a command that adds nothing runs to its end (not killed) and says the folder is over.
        const look = await sb.exec("sleep 2.5; ls /task");
        expect(look.stdout).toContain("b\n");
        expect(look.stderr).toMatch(/disk quota of the task folder exceeded/);
        expect(sb.quotaExceeded?.()).toBeInstanceOf(QuotaExceeded);
        expect((await sb.exec("rm /task/b && echo freed")).stdout).toBe("freed\n");
        expect(sb.quotaExceeded?.()).toBeUndefined();
        // One long command writing far past it (2 GiB, synced, so it takes many seconds): polled and killed.
        const t0 = Date.now();
        const dd = sb.exec(
          "dd if=/dev/zero of=/task/huge bs=1M count=2048 oflag=dsync status=none; echo finished",
          {
            timeoutMs: 300_000,
          },
        );
        await expect(dd).rejects.toThrow(/the command was killed/);
        expect(Date.now() - t0).toBeLessThan(60_000);
        expect(statSync(join(taskDir, "huge")).size).toBeLessThan(2048 * MiB);
        expect(sb.quotaExceeded?.()).toBeInstanceOf(QuotaExceeded);
        expect((await sb.exec("rm -f /task/huge; echo gone")).stdout).toBe("gone\n");
        expect(sb.quotaExceeded?.()).toBeUndefined();
      }, 120_000);
    });

    describe("escapes (each must fail)", () => {
      let sb: Sandbox;
      let hostMarker: string;
      let runnerHome: string;
      const fakeKey = `sk-ant-fake-${randomUUID()}`;

      beforeAll(async () => {
        // Planted on the host before the sandbox starts: none of it may be visible inside.
        process.env.ANTHROPIC_API_KEY = fakeKey;
        hostMarker = join(workspace, `host-marker-${randomUUID()}`);
        writeFileSync(hostMarker, "host secret\n");
        runnerHome = join(workspace, "runner-home");
        mkdirSync(join(runnerHome, "memory"), { recursive: true });
        writeFileSync(join(runnerHome, "memory", "global.md"), "runner memory\n");
        sb = await start();
      });

      afterAll(() => {
        delete process.env.ANTHROPIC_API_KEY;
      });

      it("cannot read a host file outside its mounts", async () => {
        const r = await sb.exec(["cat", hostMarker]);
        expect(r.exitCode).not.toBe(0);
        expect(r.stdout).not.toContain("host secret");
        const search = await sb.exec(`grep -rs "host secret" /task /tmp /scratch 2>/dev/null; true`);
        expect(search.stdout).toBe("");
      });

      it("cannot see the host's environment (a planted API key)", async () => {
        const r = await sb.exec("env; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'");
        expect(r.stdout).not.toContain(fakeKey);
        expect(r.stdout).not.toContain("ANTHROPIC_API_KEY");
      });

      it("cannot modify, remove or replace the SAM file", async () => {
        const before = readFileSync(join(sb.spec.taskDir, "task.md"));
        const tries = [
          "echo pwned >> /task/task.md",
          "printf pwned > /task/task.md",
          "rm -f /task/task.md",
          "mv /task/task.md /task/moved.md",
          "echo pwned > /tmp/x && mv -f /tmp/x /task/task.md",
          "chmod 777 /task/task.md",
        ];
        for (const attempt of tries) {
          const r = await sb.exec(attempt);
          expect(r.exitCode, attempt).not.toBe(0);
        }
        await expect(sb.writeFile("/task/task.md", "pwned")).rejects.toThrow(PathRefused);
        await expect(sb.writeFile("task.md", "pwned")).rejects.toThrow(PathRefused);
        expect(readFileSync(join(sb.spec.taskDir, "task.md"))).toEqual(before);
      });

      it("cannot write to a read-only mount", async () => {
        const data = mkdtempSync(join(workspace, "ro-data-"));
        chmodSync(data, 0o755); // readable by the sandbox user (65534 when the test runs as root)
        writeFileSync(join(data, "input.csv"), "a,b\n1,2\n");
        const ro = await start({}, (spec) =>
          spec.mounts.push({ source: data, target: "/data", readOnly: true, reason: "declared mount" }),
        );
        expect((await ro.exec("cat /data/input.csv")).stdout).toBe("a,b\n1,2\n");
        for (const attempt of ["echo x >> /data/input.csv", "touch /data/new", "rm /data/input.csv"]) {
          expect((await ro.exec(attempt)).exitCode, attempt).not.toBe(0);
        }
        await expect(ro.writeFile("/data/new", "x")).rejects.toThrow(PathRefused);
        await expect(ro.writeFile("/data/input.csv", "x")).rejects.toThrow(PathRefused);
        expect(existsSync(join(data, "new"))).toBe(false);
        expect(readFileSync(join(data, "input.csv"), "utf8")).toBe("a,b\n1,2\n");
      });

      it("cannot reach the Docker socket or other engine sockets", async () => {
        const r = await sb.exec(
          "for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock /run/podman/podman.sock; do test -e $s && echo found $s; done; true",
        );
        expect(r.stdout).toBe("");
      });

      it("has no network: cannot reach a port on the host, resolve names, or get out", async () => {
        const listener = await listen();
        try {
          const addresses = options.hostAddresses ?? localAddresses();
          for (const address of addresses) {
            const r = await sb.exec(
              ["bash", "-c", `exec 3<>/dev/tcp/${address}/${listener.port} && echo connected`],
              {
                timeoutMs: 10_000,
              },
            );
            expect(r.stdout, address).not.toContain("connected");
          }
          const dns = await sb.exec("getent hosts deb.debian.org || echo no-dns", { timeoutMs: 15_000 });
          expect(dns.stdout).toContain("no-dns");
          const egress = await sb.exec(["bash", "-c", "exec 3<>/dev/tcp/1.1.1.1/53 && echo connected"], {
            timeoutMs: 15_000,
          });
          expect(egress.stdout).not.toContain("connected");
          expect(listener.connections()).toBe(0);
        } finally {
          listener.server.close();
        }
      });

      it.runIf(options.networkControl ?? true)(
        "network: true keeps this host out unless the site lists its addresses (then it reaches the host port: the control)",
        async () => {
          const listener = await listen();
          try {
            const addresses = options.hostAddresses ?? localAddresses();
            // Directly, or (Apptainer: network: true goes through the run's proxy) by CONNECT.
            const script = addresses
              .map(
                (a) =>
                  `{ (exec 3<>/dev/tcp/${a}/${listener.port}; printf x >&3; timeout 2 cat <&3) 2>/dev/null | grep -q "hello from the host" || ` +
                  `{ [ -n "$HTTPS_PROXY" ] && (exec 3<>/dev/tcp/127.0.0.1/3128; printf "CONNECT ${a}:${listener.port} HTTP/1.1\\r\\n\\r\\n" >&3; timeout 2 head -c 12 <&3) 2>/dev/null | grep -q " 200"; }; } && echo connected-${a}`,
              )
              .join("; ");
            const image = options.networkImage ? { image: options.networkImage } : {};
            const closed = await start({ network: true, ...image });
            const refused = await closed.exec(["bash", "-c", `${script}; true`], { timeoutMs: 60_000 });
            expect(refused.stdout).not.toContain("connected-");
            expect(listener.connections()).toBe(0);
            const open = await start({
              ...image,
              network: true,
              openNetwork: {
                rules: { allow: ["*"], deny: [], allowedPrivateRanges: addresses.map((a) => `${a}/32`) },
                apptainerHostNetwork: false,
              },
            });
            const r = await open.exec(["bash", "-c", `${script}; true`], { timeoutMs: 60_000 });
            expect(r.stdout).toContain("connected-");
            expect(listener.connections()).toBeGreaterThan(0);
          } finally {
            listener.server.close();
          }
        },
      );

      it("a fork bomb hits the pids limit, is killed at its timeout, and the runner and sandbox survive", async () => {
        const bomb = await start({ pidsLimit: 64 });
        // The limit holds: asking for 100 processes fails to fork somewhere below it (bash says so).
        const many = await bomb.exec(
          ["bash", "-c", "for i in $(seq 100); do sleep 60 & done; echo spawned"],
          {
            timeoutMs: 20_000,
          },
        );
        expect(many.stderr).toMatch(/fork/i);
        const r = await bomb.exec(["bash", "-c", "b() { b | b & }; b; sleep 100"], { timeoutMs: 4000 });
        expect(r.timedOut || r.exitCode !== 0).toBe(true);
        // The sandbox recovers (the watchdog restarts it if nothing else could kill the bomb).
        const after = await bomb.exec("echo alive; ls -d /proc/[0-9]* | wc -l", { timeoutMs: 30_000 });
        expect(after.stdout.split("\n")[0]).toBe("alive");
        expect(Number(after.stdout.split("\n")[1])).toBeLessThan(20);
        expect(process.pid).toBeGreaterThan(0);
      }, 180_000);

      it("cannot allocate past the memory limit", async () => {
        const small = await start({ memoryBytes: 128 * MiB });
        // `tail` buffers a line that never ends: it grows until the limit kills it.
        const r = await small.exec("tail /dev/zero > /dev/null", { timeoutMs: 60_000 });
        expect(r.timedOut).toBe(false);
        if ((options.memoryLimit ?? "oom-kill") === "oom-kill") expect(r.exitCode).toBe(137);
        else {
          expect(r.exitCode).not.toBe(0);
          expect(r.stderr).toMatch(/memory exhausted|Cannot allocate memory/i);
        }
        expect((await small.exec("echo still-here")).stdout).toBe("still-here\n");
      });

      it("fills a size-limited scratch and stops at its size", async () => {
        const sc = await start({ scratch: { target: "/scratch", sizeBytes: 8 * MiB } });
        const r = await sc.exec("head -c 32M /dev/zero > /scratch/fill", { timeoutMs: 30_000 });
        expect(r.exitCode).not.toBe(0);
        expect(r.stderr).toMatch(/No space left on device/);
        const size = Number((await sc.exec("stat -c %s /scratch/fill")).stdout.trim());
        expect(size).toBeLessThanOrEqual(8 * MiB);
        expect((await sc.exec("touch /scratch/ok && echo writable")).stdout).toBe("writable\n");
      });

      it("policy refuses a declared mount through a symlink to a denied path; a real mount is granted", async () => {
        // A real SAM file through the real parser and policy; the granted spec then runs on the backend.
        const dataRoot = mkdtempSync(join(workspace, "data-root-"));
        mkdirSync(join(dataRoot, "real"));
        writeFileSync(join(dataRoot, "real", "x.csv"), "1,2\n");
        symlinkSync(join(runnerHome, "memory"), join(dataRoot, "to-memory"));
        symlinkSync("/etc", join(dataRoot, "to-etc"));
        const site = { ...BUILTIN_SITE_POLICY, allowedMountRoots: [dataRoot] };
        const plan = (mount: string) => {
          const dir = mkdtempSync(join(workspace, "policy-task-"));
          const file = join(dir, "task.md");
          writeFileSync(
            file,
            `---\nname: mounts\nmounts: ["${mount}"]\n---\n# Mounts\n## To-do\nRead.\n## Expectation\nRead.\n`,
          );
          const parsed = parseSamSync(file);
          if (!parsed.ok) throw new Error(parsed.diagnostics.map((d) => d.message).join("; "));
          return resolveSpec(parsed.sam, site, {
            home: runnerHome,
            runId: `conf-pol-${randomUUID().slice(0, 8)}`,
          });
        };
        const toMemory = (() => {
          try {
            plan(`${join(dataRoot, "to-memory")}:/data/m:ro`);
          } catch (error) {
            return error;
          }
        })();
        expect(toMemory).toBeInstanceOf(PolicyRefused);
        expect((toMemory as PolicyRefused).rule).toBe("mount-denied");
        expect((toMemory as PolicyRefused).path).toBe(realpathSync(join(runnerHome, "memory")));
        expect(() => plan(`${join(dataRoot, "to-etc")}:/data/e:ro`)).toThrow(/\[mount-denied\] \/etc: /);
        const spec = plan(`${join(dataRoot, "real")}:/data/real:ro`);
        const granted = await backend.start({ ...spec, image: options.image, ...options.specDefaults });
        started.push(granted);
        expect((await granted.exec("cat /data/real/x.csv")).stdout).toBe("1,2\n");
        expect((await granted.exec("touch /data/real/y")).exitCode).not.toBe(0);
        expect((await granted.exec("echo x >> /task/task.md")).exitCode).not.toBe(0);
        expect((await granted.exec("ls /data")).stdout).toBe("real\n");
      });

      it("host-side readFile/writeFile never follow a symlink planted in the task folder", async () => {
        const memoryFile = join(runnerHome, "memory", "global.md");
        await sb.exec(
          `ln -s ${hostMarker} /task/marker-link; ln -s ${join(runnerHome, "memory")} /task/memory-link; ln -s / /task/root-link; mkdir -p /task/d; ln -s ${workspace} /task/d/up`,
        );
        // The links exist on the host too: a naive host-side open would follow them.
        expect(readFileSync(join(sb.spec.taskDir, "marker-link"), "utf8")).toBe("host secret\n");
        await expect(sb.readFile("/task/marker-link")).rejects.toThrow(PathRefused);
        await expect(sb.readFile("marker-link")).rejects.toThrow(PathRefused);
        await expect(sb.readFile("/task/memory-link/global.md")).rejects.toThrow(PathRefused);
        await expect(sb.readFile("/task/root-link/etc/passwd")).rejects.toThrow(PathRefused);
        await expect(sb.writeFile("/task/marker-link", "overwritten")).rejects.toThrow(PathRefused);
        await expect(sb.writeFile("/task/memory-link/global.md", "steered")).rejects.toThrow(PathRefused);
        await expect(sb.writeFile("/task/memory-link/new.md", "steered")).rejects.toThrow(PathRefused);
        await expect(sb.writeFile("/task/d/up/planted", "x")).rejects.toThrow(PathRefused);
        await expect(sb.readFile("/task/../etc/hostname")).resolves.toBeInstanceOf(Buffer); // the container's own /etc
        expect(readFileSync(hostMarker, "utf8")).toBe("host secret\n");
        expect(readFileSync(memoryFile, "utf8")).toBe("runner memory\n");
        expect(existsSync(join(runnerHome, "memory", "new.md"))).toBe(false);
        expect(existsSync(join(workspace, "planted"))).toBe(false);
      });
    });

    ownersAndHostView({
      backendName,
      backend: () => backend,
      workspace: () => workspace,
      newSpec,
      start: (extra) => start(extra),
      ...(options.exists ? { exists: options.exists } : {}),
    });
  });
}

/** Shell that prints alive/gone for the pid in `pidFile` (gone also when a restart emptied /tmp). */
function alive(pidFile: string): string {
  return `p=$(cat ${pidFile} 2>/dev/null); if [ -n "$p" ] && [ -d "/proc/$p" ]; then echo alive; else echo gone; fi`;
}

/** Size of a host file, 0 when it does not exist. */
function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** `pid: cmdline` of every process this host (or harness) can see whose command line holds `token`. */
function hostProcessesWith(token: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, "latin1").replaceAll("\0", " ");
    } catch {
      continue; // exited meanwhile
    }
    if (cmdline.includes(token)) found.push(`${entry}: ${cmdline.trim()}`);
  }
  return found;
}

function sleepMs(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function localAddresses(): string[] {
  const all = Object.values(networkInterfaces())
    .flat()
    .filter((i) => i !== undefined && i.family === "IPv4")
    .map((i) => i?.address ?? "");
  return [...new Set(["127.0.0.1", ...all])].filter(Boolean);
}

async function listen(): Promise<{ server: Server; port: number; connections: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.on("error", () => undefined); // a probe that hangs up at once resets the connection
    socket.end("hello from the host\n");
  });
  await new Promise<void>((done) => server.listen(0, "0.0.0.0", done));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("listener has no port");
  return { server, port: address.port, connections: () => count };
}
