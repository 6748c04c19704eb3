// The conformance and escape suite against the real Docker engine, plus Docker-specific checks of
// the container's default-deny settings as the engine reports them.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, realpathSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { formatDoctor, runDoctor } from "../../runner/cli/commands/doctor.ts";
import { containerName, createDockerBackend } from "../../runner/sandbox/docker.ts";
import { getBackend } from "../../runner/sandbox/registry.ts";
import { hasEngine } from "../helpers/engines.ts";
import { taskFolderSpec } from "../helpers/spec.ts";
import { sandboxConformance } from "./conformance.ts";

const haveDocker = hasEngine("docker");
const docker = new Docker();

sandboxConformance(
  "docker",
  async () => {
    // Cached: a no-op when the image is up to date (CI runs the same script as a step).
    execFileSync("bash", ["scripts/build-image.sh", "--base-only"], { stdio: "inherit" });
    return createDockerBackend();
  },
  {
    image: "scifi-base:bookworm",
    // network: true sandboxes need iptables for the egress filter (built by CI's image step).
    networkImage: "scifi-sci:local",
    skip: !haveDocker,
    exists: async (runId) =>
      docker
        .getContainer(containerName(runId))
        .inspect()
        .then(() => true)
        .catch(() => false),
  },
);

describe.skipIf(!haveDocker)("docker backend specifics", () => {
  const spec = (runId: string) => {
    const taskDir = mkdtempSync(join(tmpdir(), "scifi-docker-"));
    chmodSync(taskDir, 0o777); // the container runs as uid 4321 here
    return taskFolderSpec(
      { runId, image: "scifi-base:bookworm", taskDir },
      {
        user: { uid: 4321, gid: 4321 },
        memoryBytes: 256 * 1024 ** 2,
        pidsLimit: 100,
        walltimeSec: 60,
        env: { SCIFI_RUN_ID: runId },
        labels: { "scifi.task": "specifics" },
      },
    );
  };

  it("creates the container default-deny, as the engine reports it", async () => {
    const backend = createDockerBackend();
    const sandbox = await backend.start(spec(`spec-${Date.now()}`));
    try {
      const info = await docker.getContainer(containerName(sandbox.spec.runId)).inspect();
      const host = info.HostConfig;
      expect(host.CapDrop).toEqual(["ALL"]);
      expect(host.CapAdd ?? []).toEqual([]);
      expect(host.SecurityOpt).toEqual(["no-new-privileges"]);
      expect(host.NetworkMode).toBe("none");
      expect(host.Privileged).toBe(false);
      expect(host.ReadonlyRootfs).toBe(true);
      expect(host.PidsLimit).toBe(100);
      expect(host.Memory).toBe(256 * 1024 ** 2);
      expect(host.MemorySwap).toBe(256 * 1024 ** 2);
      expect(host.NanoCpus).toBe(1e9);
      // PID 1 is the idler, root without capabilities; every exec runs as the sandbox user (AE-8).
      expect(host.Init).toBe(false);
      expect(info.Config.User).toBe("0:0");
      expect(info.Config.Labels).toMatchObject({
        scifi: "1",
        "scifi.run": sandbox.spec.runId,
        "scifi.task": "specifics",
      });
      expect((await sandbox.exec("id -u; id -g")).stdout).toBe("4321\n4321\n");
      const idler = await sandbox.exec("grep -E '^(Uid|CapEff|SigIgn)' /proc/1/status");
      expect(idler.stdout).toMatch(/Uid:\s+0\s+0\s+0\s+0\n/);
      expect(idler.stdout).toMatch(/CapEff:\s+0+\n/);
      // SIGCHLD (17) ignored: the kernel reaps the orphans PID 1 adopts.
      expect(idler.stdout).toMatch(/SigIgn:\s+0*10000\n/);
      // No capabilities at all, effective or bounding.
      const caps = await sandbox.exec("grep -E '^Cap(Eff|Bnd|Prm)' /proc/self/status");
      expect(caps.stdout).toMatch(/CapPrm:\s+0+\nCapEff:\s+0+\nCapBnd:\s+0+/);
      expect((await sandbox.exec("grep NoNewPrivs /proc/self/status")).stdout).toMatch(/NoNewPrivs:\s+1/);
      expect((await sandbox.exec("touch /usr/x")).exitCode).not.toBe(0);
    } finally {
      await sandbox.stop();
    }
  });

  it("recovers when leftover processes fill the pids limit so that no exec can start", async () => {
    const sandbox = await createDockerBackend().start({ ...spec(`pids-${Date.now()}`), pidsLimit: 24 });
    try {
      // Detached sleepers outlive their exec and take every pid the limit allows.
      const fill = await sandbox.exec(
        ["bash", "-c", "for i in $(seq 40); do setsid sleep 600 </dev/null >/dev/null 2>&1 & done; true"],
        { timeoutMs: 20_000 },
      );
      expect(fill.timedOut).toBe(false);
      // The engine cannot start a process now; the backend restarts the container and runs it.
      const after = await sandbox.exec("echo alive; ls -d /proc/[0-9]* | wc -l", { timeoutMs: 60_000 });
      expect(after.stdout.split("\n")[0]).toBe("alive");
      expect(Number(after.stdout.split("\n")[1])).toBeLessThan(10);
    } finally {
      await sandbox.stop();
    }
  }, 120_000);

  it("an abort (the quota's kill) that must restart the container is over when its exec returns: the sandbox is alive, no death", async () => {
    const sandbox = await createDockerBackend().start({ ...spec(`abort-${Date.now()}`), pidsLimit: 24 });
    try {
      // The sleepers take every pid, so the abort's kill cannot start an exec and restarts the container.
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 3_000);
      const held = await sandbox.exec(
        [
          "bash",
          "-c",
          "for i in $(seq 40); do setsid sleep 600 </dev/null >/dev/null 2>&1 & done; exec sleep 600",
        ],
        { timeoutMs: 60_000, signal: abort.signal },
      );
      expect(held.exitCode).not.toBe(0);
      // Asked at once, as the run's revival asks after a command ended by a signal (AE-9).
      expect(await sandbox.alive?.()).toBe(true);
      expect((await sandbox.exec("echo alive")).stdout).toBe("alive\n");
    } finally {
      await sandbox.stop();
    }
  }, 120_000);

  it("names an absent image and the command that builds it", async () => {
    const backend = createDockerBackend();
    await expect(backend.start({ ...spec("noimg"), image: "scifi-no-such:image" })).rejects.toThrow(
      "sandbox backend 'docker' is unavailable: the image 'scifi-no-such:image' is not present\n  fix: bash scripts/build-image.sh",
    );
  });

  it("prune removes orphaned scifi containers of its home and keeps live and listed ones", async () => {
    const backend = createDockerBackend();
    const home = mkdtempSync(join(tmpdir(), "scifi-prune-home-"));
    // A runner that is gone: a finished process's pid, on this host, in this home.
    const dead = spawnSync("true").pid ?? 0;
    const deadOwner = {
      "scifi.host": hostname(),
      "scifi.pid": String(dead),
      "scifi.home": realpathSync(home),
    };
    const orphan = `orphan-${Date.now()}`;
    // An orphan: a container with scifi labels that no live sandbox owns (as a crashed runner leaves).
    const c = await docker.createContainer({
      name: containerName(orphan),
      Image: "scifi-base:bookworm",
      Entrypoint: ["sleep", "infinity"],
      Labels: { scifi: "1", "scifi.run": orphan, ...deadOwner },
    });
    await c.start();
    const kept = `kept-${Date.now()}`;
    const live = await backend.start({ ...spec(`live-${Date.now()}`), home });
    const listed = await docker.createContainer({
      name: containerName(kept),
      Image: "scifi-base:bookworm",
      Entrypoint: ["sleep", "infinity"],
      Labels: { scifi: "1", "scifi.run": kept, ...deadOwner },
    });
    try {
      const removed = await backend.prune({ home, liveRunIds: new Set([kept]) });
      expect(removed).toContain(`${containerName(orphan)} (run ${orphan})`);
      expect(removed.join()).not.toContain(kept);
      expect(removed.join()).not.toContain(live.spec.runId);
      // Gone (another test process's prune may be removing the same orphan at this moment: wait for it).
      await expect
        .poll(
          () =>
            c.inspect().then(
              () => "present",
              () => "gone",
            ),
          { timeout: 20_000 },
        )
        .toBe("gone");
      expect((await live.exec("echo live")).stdout).toBe("live\n");
    } finally {
      await live.stop();
      await listed.remove({ force: true });
    }
  });
});

describe.skipIf(!haveDocker)("docker cleanup on signals", () => {
  for (const signal of ["SIGTERM", "SIGINT", "exit"] as const) {
    it(`a runner that ends by ${signal} removes its live sandbox`, async () => {
      const taskDir = mkdtempSync(join(tmpdir(), "scifi-signal-"));
      const runId = `signal-${signal.toLowerCase()}-${Date.now()}`;
      // A real runner process: starts a sandbox through the backend, says so, then idles.
      const code = `
        import { createDockerBackend } from ${JSON.stringify(join(import.meta.dirname, "../../runner/sandbox/docker.ts"))};
        const sandbox = await createDockerBackend().start(${JSON.stringify(
          taskFolderSpec(
            { runId, image: "scifi-base:bookworm", taskDir },
            { memoryBytes: 256 * 1024 ** 2, pidsLimit: 64, walltimeSec: 60 },
          ),
        )});
        console.log("started " + sandbox.spec.runId);
        if (${JSON.stringify(signal)} === "exit") setTimeout(() => process.exit(0), 200);
        setInterval(() => {}, 1000);
      `;
      const child = spawn(process.execPath, ["--input-type=module", "-e", code], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      const exited = new Promise<number | null>((done) => child.once("exit", (c) => done(c)));
      await new Promise<void>((done, fail) => {
        child.stdout.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes(`started ${runId}`)) done();
        });
        child.once("exit", () => fail(new Error("the runner exited before starting its sandbox")));
      });
      const container = docker.getContainer(containerName(runId));
      if (signal !== "exit") expect((await container.inspect()).State.Running).toBe(true);
      if (signal !== "exit") child.kill(signal);
      expect(await exited).toBe({ SIGTERM: 143, SIGINT: 130, exit: 0 }[signal]);
      await expect(container.inspect()).rejects.toThrow(/no such container/i);
    });
  }
});

describe.skipIf(!haveDocker)("scifi doctor", () => {
  it("reports the engine, the images (ROOT absent in the local one) and the fix for each problem", async () => {
    execFileSync("bash", ["scripts/build-image.sh"], { stdio: "inherit" });
    const home = mkdtempSync(join(tmpdir(), "scifi-doctor-"));
    const items = await runDoctor({ SCIFI_HOME: home, SCIFI_SITE_POLICY: join(home, "missing.yaml") });
    const byName = new Map(items.map((i) => [i.name, i]));
    expect(byName.get("backend docker")).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/^Docker Engine \S+ \(API [\d.]+\)$/),
    });
    expect(byName.get("image scifi-sci:local")).toMatchObject({
      ok: true,
      detail: expect.stringContaining("ROOT absent"),
    });
    expect(byName.get("site policy")).toEqual({
      name: "site policy",
      ok: false,
      detail: `SCIFI_SITE_POLICY names ${join(home, "missing.yaml")}, which does not exist`,
      fix: `cp site-policy.example.yaml ${join(home, "missing.yaml")}`,
    });
    expect(formatDoctor(items)).toContain(`to fix:\n`);
    expect(formatDoctor(items)).toContain(
      `  site policy: cp site-policy.example.yaml ${join(home, "missing.yaml")}`,
    );
  });
});

describe("backend registry", () => {
  it("lists the valid backends when a name is unknown", async () => {
    await expect(getBackend("podman")).rejects.toThrow(
      "unknown sandbox backend 'podman'; valid backends: apptainer, docker",
    );
    expect((await getBackend("docker")).name).toBe("docker");
  });
});
