// Apptainer-specific behaviour of the backend, run INSIDE the harness as the non-root user against
// the real apptainer binary (no skipping: a missing apptainer fails here). The shared conformance
// and escape suites run from conformance.inner.ts.

import { mkdtemp, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { availableParallelism, networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../../runner/policy/spec.ts";
import { createApptainerBackend, instanceName } from "../../../runner/sandbox/apptainer.ts";
import {
  PathRefused,
  type Sandbox,
  SandboxError,
  SandboxUnavailable,
  TRUNCATION_MARKER,
} from "../../../runner/sandbox/types.ts";
import { taskSpec } from "./fixtures.ts";

const backend = createApptainerBackend();

async function instances(): Promise<string[]> {
  const r = await execa("apptainer", ["instance", "list", "--json"]);
  return ((JSON.parse(r.stdout) as { instances: { instance: string }[] }).instances ?? []).map(
    (i) => i.instance,
  );
}

describe("apptainer backend (inside the harness, non-root)", () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    expect(process.getuid?.()).not.toBe(0);
    process.env.ANTHROPIC_API_KEY = "sk-ant-host-secret-must-not-leak";
    sandbox = await backend.start(await taskSpec({ env: { FROM_SPEC: "spec value, with comma" } }));
  });
  afterAll(async () => {
    await sandbox?.stop();
  });

  it("reports the apptainer version", async () => {
    const status = await backend.status();
    expect(status.available).toBe(true);
    expect(status.detail).toMatch(/apptainer version \d+\.\d+/);
  });

  it("runs argv and scripts with exit codes, stdout and stderr", async () => {
    const a = await sandbox.exec(["sh", "-c", "echo out; echo err >&2; exit 3"]);
    expect(a).toMatchObject({
      exitCode: 3,
      stdout: "out\n",
      stderr: "err\n",
      timedOut: false,
      truncated: false,
    });
    const b = await sandbox.exec("echo $((6 * 7))");
    expect(b.stdout).toBe("42\n");
    expect(b.exitCode).toBe(0);
  });

  it("runs as the calling user in /task, with cwd, stdin and env", async () => {
    const who = await sandbox.exec(["sh", "-c", "id -u; pwd"]);
    expect(who.stdout).toBe(`${process.getuid?.()}\n/task\n`);
    await sandbox.exec("mkdir -p sub");
    expect((await sandbox.exec(["pwd"], { cwd: "sub" })).stdout).toBe("/task/sub\n");
    expect((await sandbox.exec(["cat"], { stdin: "piped in" })).stdout).toBe("piped in");
    const env = await sandbox.exec(["sh", "-c", 'echo "$FROM_SPEC|$FROM_OPTS"'], {
      env: { FROM_OPTS: "o=1" },
    });
    expect(env.stdout).toBe("spec value, with comma|o=1\n");
  });

  it("does not let the host environment in", async () => {
    const r = await sandbox.exec(["env"]);
    expect(r.stdout).not.toContain("ANTHROPIC_API_KEY");
    expect(r.stdout).not.toContain("sk-ant-host-secret");
  });

  it("kills a command at its timeout, really", async () => {
    const r = await sandbox.exec("sleep 3; touch /task/too-late", { timeoutMs: 800 });
    expect(r.timedOut).toBe(true);
    expect(r.durationMs).toBeLessThan(6000);
    await new Promise((res) => setTimeout(res, 3500));
    await expect(stat(join(sandbox.spec.taskDir, "too-late"))).rejects.toThrow(/ENOENT/);
  });

  it("a command exiting 124 by itself is not a timeout", async () => {
    const r = await sandbox.exec("exit 124");
    expect(r).toMatchObject({ exitCode: 124, timedOut: false });
  });

  it("caps output with the truncation marker", async () => {
    const r = await sandbox.exec("head -c 300000 /dev/zero | tr '\\0' a", { maxOutputBytes: 1000 });
    expect(r.truncated).toBe(true);
    expect(r.stdout).toBe("a".repeat(1000) + TRUNCATION_MARKER);
    expect(r.exitCode).toBe(0);
  });

  it("writes and reads task files from the host; the SAM file is read-only inside", async () => {
    await sandbox.writeFile("notes/a.txt", "hello");
    expect((await sandbox.exec(["cat", "/task/notes/a.txt"])).stdout).toBe("hello");
    await sandbox.exec("echo made-inside > /task/inside.txt");
    expect((await sandbox.readFile("/task/inside.txt")).toString()).toBe("made-inside\n");
    const r = await sandbox.exec("echo tampered >> /task/task.md");
    expect(r.exitCode).not.toBe(0);
    expect(await readFile(join(sandbox.spec.taskDir, "task.md"), "utf8")).not.toContain("tampered");
  });

  it("refuses host-side access outside the task folder or through a planted symlink", async () => {
    const hostDir = await mkdtemp(join(tmpdir(), "scifi-host-"));
    const marker = join(hostDir, "marker.txt");
    await writeFile(marker, "host secret");
    // Outside the task folder, files are the container's own (read inside the container).
    expect((await sandbox.readFile("../../etc/os-release")).toString()).toMatch(/Debian/);
    await expect(sandbox.writeFile("/task/task.md", "pwned")).rejects.toBeInstanceOf(PathRefused);
    // The container plants links; the host-side component must not follow them.
    await symlink(marker, join(sandbox.spec.taskDir, "link-file"));
    await symlink(hostDir, join(sandbox.spec.taskDir, "link-dir"));
    await expect(sandbox.readFile("link-file")).rejects.toBeInstanceOf(PathRefused);
    await expect(sandbox.writeFile("link-file", "overwritten")).rejects.toBeInstanceOf(PathRefused);
    await expect(sandbox.readFile("link-dir/marker.txt")).rejects.toBeInstanceOf(PathRefused);
    await expect(sandbox.writeFile("link-dir/new.txt", "x")).rejects.toBeInstanceOf(PathRefused);
    expect(await readFile(marker, "utf8")).toBe("host secret");
    await expect(stat(join(hostDir, "new.txt"))).rejects.toThrow(/ENOENT/);
  });

  it("does not show host files outside the mounts", async () => {
    const marker = join(tmpdir(), `scifi-marker-${process.pid}`);
    await writeFile(marker, "host marker");
    const r = await sandbox.exec(["cat", marker]);
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).not.toContain("host marker");
    expect((await sandbox.exec(["ls", "/var/run/docker.sock"])).exitCode).not.toBe(0);
  });

  it("has no network when the spec grants none", async () => {
    const server: Server = createServer((s) => s.end("reached"));
    await new Promise<void>((res) => server.listen(0, "0.0.0.0", res));
    const port = (server.address() as { port: number }).port;
    try {
      const ips = [
        "127.0.0.1",
        ...Object.values(networkInterfaces())
          .flat()
          .filter((i) => i?.family === "IPv4")
          .map((i) => i?.address),
      ];
      for (const ip of new Set(ips)) {
        const r = await sandbox.exec(["timeout", "5", "bash", "-c", `cat < /dev/tcp/${ip}/${port}`]);
        expect(r.stdout, `connect to ${ip}:${port}`).not.toContain("reached");
        expect(r.exitCode).not.toBe(0);
      }
      const links = await sandbox.exec(["cat", "/proc/net/dev"]);
      expect(links.stdout).not.toMatch(/eth0|ens|enp/);
    } finally {
      server.close();
    }
  });

  it("holds the pids limit against a fork bomb, kills it at the timeout and survives", async () => {
    const small = await backend.start(await taskSpec({ pidsLimit: 32 }));
    try {
      // The process budget is set: the user's tasks now plus pidsLimit (RLIMIT_NPROC is per uid).
      const limit = Number((await small.exec(["bash", "-c", "ulimit -u"])).stdout.trim());
      expect(limit).toBeGreaterThanOrEqual(32);
      expect(limit).toBeLessThan(32 + 400);
      const bomb = await small.exec(["bash", "-c", "b() { b | b & }; b; sleep 100"], { timeoutMs: 4000 });
      expect(bomb.timedOut).toBe(true);
      const after = await small.exec("echo alive; ls -d /proc/[0-9]* | wc -l", { timeoutMs: 60_000 });
      expect(after.stdout.split("\n")[0]).toBe("alive");
      expect(Number(after.stdout.split("\n")[1])).toBeLessThan(10);
    } finally {
      await small.stop();
    }
  });

  it("holds the memory limit", async () => {
    // tail -c keeps the last N bytes in memory: 1 GiB against a 512 MiB limit must fail.
    const r = await sandbox.exec("head -c 1073741824 /dev/zero | tail -c 1073741824 | wc -c", {
      timeoutMs: 60_000,
    });
    expect(r.stdout.trim()).not.toBe("1073741824");
    expect(r.stderr).toMatch(/memory|Cannot allocate/i);
    expect((await sandbox.exec(["echo", "alive"])).stdout).toBe("alive\n");
  });

  it("a second exec runs while the first is still going", async () => {
    const slow = sandbox.exec("sleep 2; echo slow");
    const fast = await sandbox.exec(["echo", "fast"]);
    expect(fast.stdout).toBe("fast\n");
    expect((await slow).stdout).toBe("slow\n");
  });
});

describe("apptainer backend lifecycle", () => {
  it("gives a size-limited scratch", async () => {
    const sb = await backend.start(
      await taskSpec({ scratch: { target: "/scratch", sizeBytes: 16 * 1024 * 1024 } }),
    );
    try {
      const fill = await sb.exec(
        "dd if=/dev/zero of=/scratch/fill bs=1M count=64 2>&1; sync; du -m /scratch/fill | cut -f1",
      );
      expect(fill.stdout).toMatch(/No space left/);
      const usedMiB = Number(fill.stdout.trim().split("\n").at(-1));
      expect(usedMiB).toBeLessThanOrEqual(16);
      expect((await sb.exec("echo ok > /scratch/small; cat /scratch/small")).stdout).toContain("ok");
    } finally {
      await sb.stop();
    }
  });

  it("stop is idempotent, removes the instance, and later execs throw SandboxError", async () => {
    const sb = await backend.start(await taskSpec());
    const name = instanceName(sb.spec.runId);
    expect(await instances()).toContain(name);
    await Promise.all([sb.stop(), sb.stop()]);
    await sb.stop();
    expect(await instances()).not.toContain(name);
    await expect(sb.exec(["true"])).rejects.toBeInstanceOf(SandboxError);
  });

  it("prune stops this home's instances whose owner is gone, and keeps live and listed ones", async () => {
    const home = await mkdtemp(join(tmpdir(), "scifi-prune-home-"));
    // As a runner killed hard leaves them: instances whose owner process is gone.
    const orphan = await startInChild(await taskSpec({ home }));
    const listed = await startInChild(await taskSpec({ home }));
    const live = await backend.start(await taskSpec({ home }));
    try {
      const removed = await createApptainerBackend().prune({
        home,
        liveRunIds: new Set([listed]),
      });
      expect(removed).toContain(`${instanceName(orphan)} (run ${orphan})`);
      expect(removed.join()).not.toContain(listed);
      expect(removed.join()).not.toContain(live.spec.runId);
      const names = await instances();
      expect(names).not.toContain(instanceName(orphan));
      expect(names).toContain(instanceName(listed));
      expect(names).toContain(instanceName(live.spec.runId));
    } finally {
      await live.stop();
      await createApptainerBackend().prune({ home });
    }
  });

  it("a missing SIF is SandboxUnavailable with the command that makes it", async () => {
    const err = await backend.start(await taskSpec({ image: "no-such-image:1" })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxUnavailable);
    expect((err as SandboxUnavailable).fix).toContain("apptainer-harness.sh sif no-such-image:1");
  });

  it("a missing apptainer binary is reported with the fix", async () => {
    const missing = createApptainerBackend({ apptainer: "/nonexistent/apptainer" });
    const status = await missing.status();
    expect(status.available).toBe(false);
    expect(status.fix).toMatch(/apptainer/i);
    await expect(missing.start(await taskSpec())).rejects.toBeInstanceOf(SandboxUnavailable);
  });

  it("refuses bind paths Apptainer's syntax cannot carry", async () => {
    const spec = await taskSpec();
    spec.mounts.push({
      source: "/tmp/a:b",
      target: "/data",
      readOnly: true,
      reason: "declared mount (line 3)",
    });
    await expect(backend.start(spec)).rejects.toThrow(/containing ':' or ','.*declared mount \(line 3\)/);
    expect(await instances()).not.toContain(instanceName(spec.runId));
  });
});

describe("cpus without cgroups (inside the harness, non-root)", () => {
  it("pins a sandbox's execs to `cpus` CPUs (nproc and the affinity say so), and leaves one that may use all alone", async () => {
    const host = availableParallelism();
    // A one-CPU machine would make this vacuous; CI machines have two or more.
    expect(host).toBeGreaterThan(1);
    const one = await backend.start(await taskSpec({ cpus: 1 }));
    const all = await backend.start(await taskSpec({ cpus: host }));
    try {
      expect((await one.exec(["nproc"])).stdout.trim()).toBe("1");
      const allowed = (await one.exec(["sh", "-c", "grep Cpus_allowed_list /proc/self/status"])).stdout;
      expect(allowed).toMatch(/^Cpus_allowed_list:\s*\d+\n$/);
      // A process the command starts in the background inherits the pinning too.
      expect(
        (await one.exec(["sh", "-c", "(nproc > /tmp/bg.txt) & wait; cat /tmp/bg.txt"])).stdout.trim(),
      ).toBe("1");
      expect((await all.exec(["nproc"])).stdout.trim()).toBe(String(host));
    } finally {
      await one.stop();
      await all.stop();
    }
  });
});

/** Starts the sandbox of `spec` in a runner process of its own, then kills that runner hard. */
async function startInChild(spec: SandboxSpec): Promise<string> {
  const child = execa(
    process.execPath,
    [join(import.meta.dirname, "..", "owner-child.ts"), "apptainer", JSON.stringify(spec)],
    {
      stdin: "ignore",
      reject: false,
    },
  );
  await new Promise<void>((done) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes(`started ${spec.runId}`)) done();
    });
  });
  child.kill("SIGKILL");
  await child;
  return spec.runId;
}
