// The run's network proxy: a 100 MB download from a local test host through the proxy (a Docker
// sandbox with `network: [host]`: forwarder, unix socket, proxy) against the same download from a
// container on the test host's network without it, in one run; and the added latency per request
// (median of small requests, each on a new connection). Targets: ratio >= 0.8, added < 5 ms.
import { chmodSync, copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Docker from "dockerode";
import { createDockerBackend } from "../runner/sandbox/docker.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { taskFolderSpec } from "../test/helpers/spec.ts";

const IMAGE = "scifi-sci:local";
const SIZE = 100 * 1000 * 1000;
const SMALL = 50;

interface Measure {
  bytes: number;
  seconds: number;
  mbps: number;
  latency_ms: number;
}

export async function run(): Promise<BenchResult[]> {
  const docker = new Docker();
  const stamp = `${process.pid}-${Date.now()}`;
  const netName = `scifi-netbench-${stamp}`;
  const root = resolve(import.meta.dirname, "..");
  const taskDir = mkdtempSync(join(tmpdir(), "scifi-netbench-"));
  chmodSync(taskDir, 0o777);
  copyFileSync(join(root, "test/network/probe.py"), join(taskDir, "probe.py"));
  chmodSync(join(taskDir, "probe.py"), 0o644);
  const hosts: Record<string, string[]> = {};
  const containers: Docker.Container[] = [];
  const backend = createDockerBackend({ proxy: { hosts, systemResolver: false } });
  let sandbox: Awaited<ReturnType<typeof backend.start>> | undefined;
  try {
    await docker.createNetwork({
      Name: netName,
      Driver: "bridge",
      IPAM: { Config: [{ Subnet: "10.213.9.0/24" }] },
    });
    const host = await docker.createContainer({
      Image: IMAGE,
      Entrypoint: ["python3", "/srv/test-host.py"],
      User: "65534:65534",
      HostConfig: {
        NetworkMode: netName,
        Binds: [`${join(root, "test/network/test-host.py")}:/srv/test-host.py:ro`],
      },
    });
    containers.push(host);
    await host.start();
    const ip = (await host.inspect()).NetworkSettings.Networks[netName]?.IPAddress ?? "";
    hosts["data.test"] = [ip];
    // Without the proxy: a container on the test host's network, the same client.
    const direct = await docker.createContainer({
      Image: IMAGE,
      Entrypoint: ["sleep", "infinity"],
      User: "65534:65534",
      HostConfig: { NetworkMode: netName, Binds: [`${taskDir}:/task:ro`] },
    });
    containers.push(direct);
    await direct.start();
    sandbox = await backend.start(
      taskFolderSpec(
        { runId: `netbench-${stamp}`, image: IMAGE, taskDir },
        {
          walltimeSec: 600,
          cpus: 2,
          networkRules: { allow: ["data.test:8000"], deny: [], allowedPrivateRanges: ["10.213.9.0/24"] },
        },
      ),
    );
    await new Promise((r) => setTimeout(r, 500));
    const bench = ["python3", "/task/probe.py", "bench"];
    const viaDirect = async () =>
      parse(await execIn(direct, [...bench, `http://${ip}:8000`, String(SIZE), String(SMALL)]));
    const viaProxy = async () => {
      const r = await sandbox?.exec([...bench, "http://data.test:8000", String(SIZE), String(SMALL)], {
        timeoutMs: 300_000,
      });
      return parse(`${r?.stdout}${r?.stderr}`);
    };
    // Alternate, take each side's best of three (the machine is shared).
    const d: Measure[] = [];
    const p: Measure[] = [];
    for (let i = 0; i < 3; i++) {
      d.push(await viaDirect());
      p.push(await viaProxy());
    }
    const bestD = Math.max(...d.map((m) => m.mbps));
    const bestP = Math.max(...p.map((m) => m.mbps));
    const latD = Math.min(...d.map((m) => m.latency_ms));
    const latP = Math.min(...p.map((m) => m.latency_ms));
    return [
      {
        name: "100 MB download through the run's proxy (throughput; baseline without the proxy)",
        value: bestD / bestP,
        unit: "x slower",
        baseline: 1,
        maxRatio: 1 / 0.8,
        note: `through the proxy ${bestP.toFixed(0)} MB/s, without ${bestD.toFixed(0)} MB/s: proxy/direct = ${(bestP / bestD).toFixed(2)} (target >= 0.8); best of 3 each`,
      },
      {
        name: "added latency per request (median of 50 small requests, new connection each)",
        value: latP - latD,
        unit: "ms",
        maxValue: 5,
        note: `through the proxy ${latP.toFixed(2)} ms, without ${latD.toFixed(2)} ms`,
      },
    ];
  } finally {
    await sandbox?.stop().catch(() => undefined);
    for (const c of containers) await c.remove({ force: true }).catch(() => undefined);
    await docker
      .getNetwork(netName)
      .remove()
      .catch(() => undefined);
  }
}

function parse(text: string): Measure {
  // Docker's multiplexed stream puts a frame header before the line: start at the brace.
  const line = text.split("\n").find((l) => l.includes('{"bytes"'));
  if (!line) throw new Error(`bench client failed: ${text.slice(-400)}`);
  return JSON.parse(line.slice(line.indexOf("{"))) as Measure;
}

async function execIn(c: Docker.Container, cmd: string[]): Promise<string> {
  const exec = await c.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  stream.on("data", (b: Buffer) => chunks.push(b));
  await new Promise((r) => stream.on("end", r));
  return Buffer.concat(chunks).toString("latin1");
}
