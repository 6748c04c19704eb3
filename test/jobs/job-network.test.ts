// The network of agent jobs on the real one-node SLURM cluster with Docker: a `network: true` job
// runs on a bridge network of its own (labelled, inter-container traffic off, never Docker's default
// bridge), removed when the job ends and when it is cancelled; a task with a host list submits jobs
// with no network, and submit_job says so; with approval: [network], a pending or denied request
// leaves a job only lo, an approved one gives it its network.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { type AddressInfo, createServer } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ApprovalGate } from "../../runner/approval/gate.ts";
import {
  type ApprovalRequest,
  appendApprovalLine,
  decide,
  pendingApprovals,
  readApprovalLines,
} from "../../runner/approval/store.ts";
import type { JobSandbox } from "../../runner/jobs/batch-script.ts";
import { JobBroker } from "../../runner/jobs/broker.ts";
import { DEFAULT_JOBS_POLICY } from "../../runner/jobs/policy.ts";
import { jobNetworkNote } from "../../runner/jobs/run-jobs.ts";
import { jobTools } from "../../runner/jobs/tools.ts";
import type { SamMetadata } from "../../runner/sam/types.ts";
import type { ToolContext } from "../../runner/tools/tool.ts";
import { hasEngine } from "../helpers/engines.ts";
import { samMetadata, taskFolders, writeScript } from "./fixtures.ts";

const roots: string[] = [];
const brokers: JobBroker[] = [];
const IMAGE = "scifi-base:bookworm";
/** With network: the holder's egress filter needs iptables and setpriv (the scientific image). */
const SCI_IMAGE = "scifi-sci:local";

afterAll(async () => {
  for (const b of brokers) await b.cancelAll("test over").catch(() => undefined);
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

async function makeBroker(
  sam: Partial<SamMetadata>,
  network: boolean,
  over: Partial<Exclude<JobSandbox, { engine: "none" }>> = {},
  networkApproved?: () => boolean,
) {
  const folders = await taskFolders("jobnet");
  roots.push(folders.root);
  const sandbox: JobSandbox = { engine: "docker", image: IMAGE, sif: "/none.sif", network, ...over };
  const broker = new JobBroker({
    runId: `jobnet-${Date.now()}`,
    taskDir: folders.taskDir,
    recordsDir: folders.recordsDir,
    sam: samMetadata(sam),
    policy: DEFAULT_JOBS_POLICY,
    sandbox,
    ...(networkApproved ? { networkApproved } : {}),
  });
  brokers.push(broker);
  // A root runner's job container runs as the sandbox user (65534): lend it the folder, as the work phase does.
  const lend = () => {
    if (process.getuid?.() === 0) execFileSync("chown", ["-R", "65534:65534", folders.taskDir]);
  };
  return { broker, sandbox, lend, ...folders };
}

function docker(args: string[]): string {
  try {
    return execFileSync("docker", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "";
  }
}

async function until(probe: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (probe()) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return probe();
}

const ctx = {
  sandbox: undefined as never,
  bashTimeoutMs: 10_000,
  maxOutputChars: 20_000,
} satisfies ToolContext;

describe.skipIf(!hasEngine("slurm") || !hasEngine("docker"))(
  "the network of agent jobs (SLURM, Docker)",
  () => {
    it("network: true: a bridge network of the job's own behind the egress filter, not the default bridge; gone when the job ends and after scancel", async () => {
      // A service on this node (the job's node): the filter refuses it, unless the site lists it.
      const service = createServer((c) => {
        c.on("error", () => undefined); // a probe that hangs up at once resets the connection
        c.end("node service\n");
      });
      await new Promise<void>((r) => service.listen(0, "0.0.0.0", () => r()));
      const port = (service.address() as AddressInfo).port;
      const nodeAddress =
        Object.values(networkInterfaces())
          .flat()
          .find((i) => i && i.family === "IPv4" && !i.internal)?.address ?? "";
      const probe = `python3 -c 'import socket\ntry:\n  socket.create_connection(("${nodeAddress}", ${port}), timeout=5).close(); print("node=OK")\nexcept Exception as e: print("node=NO", type(e).__name__)'`;
      const { broker, taskDir, lend } = await makeBroker({ network: true }, true, { image: SCI_IMAGE });
      await writeScript(taskDir, "net.sh", `echo "interfaces=$(grep -c : /proc/net/dev)"\n${probe}\nsleep 6`);
      lend();
      const job = await broker.submit({ script: "net.sh", time: 2, memory: "200M" });
      const name = `scifi-job-${job.jobId}`;
      const net = `${name}-net`;
      expect(await until(() => docker(["ps", "-q", "--filter", `name=^${name}$`]) !== "", 120_000)).toBe(
        true,
      );
      // The holder is on the job's network and nothing else; the job's container is in its namespace.
      const networks = JSON.parse(
        docker(["inspect", net, "--format", "{{json .NetworkSettings.Networks}}"]) || "{}",
      ) as Record<string, unknown>;
      expect(Object.keys(networks)).toEqual([net]);
      expect(docker(["inspect", name, "--format", "{{.HostConfig.NetworkMode}}"])).toBe(
        `container:${docker(["inspect", net, "--format", "{{.Id}}"])}`,
      );
      const info = JSON.parse(docker(["network", "inspect", net]) || "[]") as {
        Driver: string;
        Labels: Record<string, string>;
        Options: Record<string, string>;
      }[];
      expect(info[0]?.Driver).toBe("bridge");
      expect(info[0]?.Labels).toMatchObject({
        scifi: "1",
        "scifi.run": broker.runId,
        "scifi.job": job.jobId,
      });
      expect(info[0]?.Options["com.docker.network.bridge.enable_icc"]).toBe("false");
      expect(await broker.status(job.jobId, 120_000).then((s) => s.state)).toBe("COMPLETED");
      expect((await broker.output(job.jobId)).text).toBe("interfaces=2\nnode=NO ConnectionRefusedError\n");
      // The control: the same job where the site lists the node's address reaches the service.
      const allowed = await makeBroker({ network: true }, true, {
        image: SCI_IMAGE,
        allowedPrivateRanges: [`${nodeAddress}/32`],
      });
      await writeScript(allowed.taskDir, "net.sh", probe);
      allowed.lend();
      const control = await allowed.broker.submit({ script: "net.sh", time: 2, memory: "200M" });
      expect(await allowed.broker.status(control.jobId, 120_000).then((st) => st.state)).toBe("COMPLETED");
      expect((await allowed.broker.output(control.jobId)).text).toBe("node=OK\n");
      service.close();
      expect(
        await until(() => docker(["network", "ls", "-q", "--filter", `name=^${net}$`]) === "", 20_000),
      ).toBe(true);

      await writeScript(taskDir, "long.sh", "sleep 120");
      lend();
      const long = await broker.submit({ script: "long.sh", time: 3 });
      const longName = `scifi-job-${long.jobId}`;
      expect(await until(() => docker(["ps", "-q", "--filter", `name=^${longName}$`]) !== "", 120_000)).toBe(
        true,
      );
      expect(docker(["network", "ls", "-q", "--filter", `name=^${longName}-net$`])).not.toBe("");
      await broker.cancelAll("task cancelled");
      expect(await until(() => docker(["ps", "-aq", "--filter", `name=^${longName}$`]) === "", 60_000)).toBe(
        true,
      );
      expect(
        await until(
          () => docker(["network", "ls", "-q", "--filter", `name=^${longName}-net$`]) === "",
          60_000,
        ),
      ).toBe(true);
    }, 300_000);

    it("a host list: the job has no network, and submit_job tells the agent to fetch in the work sandbox", async () => {
      const meta = { networkHosts: ["data.example.org"] };
      const { broker, sandbox, taskDir, lend } = await makeBroker(meta, false);
      const note = jobNetworkNote(samMetadata(meta), sandbox);
      const submit = jobTools(broker, note).find((t) => t.name === "submit_job");
      if (!submit) throw new Error("submit_job not offered");
      expect(submit.spec.description).toContain(
        "A task's host list (`network: [..]`) is reachable only from your work sandbox, never from a job",
      );
      await writeScript(taskDir, "net.sh", 'echo "interfaces=$(grep -c : /proc/net/dev)"');
      lend();
      const result = await submit.run({ script: "net.sh", time: "2", memory: "200M" }, ctx);
      expect(result.ok).toBe(true);
      expect(result.output).toContain(
        "Network: a job has no network: the task's host list (data.example.org) is reachable only from the work sandbox, through the run's proxy. Fetch the data there, into the task folder, and let the job read it from /task.",
      );
      const jobId = /Submitted job (\d+)/.exec(result.output)?.[1] ?? "";
      expect(await broker.status(jobId, 120_000).then((s) => s.state)).toBe("COMPLETED");
      // Only the loopback interface.
      expect((await broker.output(jobId)).text).toBe("interfaces=1\n");
    }, 300_000);

    it("approval: [network] binds jobs: pending or denied, a network: true job has only lo; approved, its own network (issue 25)", async () => {
      const home = await mkdtemp(join(tmpdir(), "scifi-jobnet-approval-"));
      roots.push(home);
      const runId = `jobnet-approval-${Date.now()}`;
      mkdirSync(join(home, "runs", runId), { recursive: true });
      const gate = new ApprovalGate({ home, runId, required: ["network"], pollMs: 50 });
      const { broker, taskDir, lend } = await makeBroker({ network: true }, true, { image: SCI_IMAGE }, () =>
        gate.runWideApproved("network"),
      );
      await writeScript(taskDir, "net.sh", 'echo "interfaces=$(grep -c : /proc/net/dev)"');
      const interfaces = async () => {
        lend();
        const job = await broker.submit({ script: "net.sh", time: 2, memory: "200M" });
        expect(await broker.status(job.jobId, 120_000).then((st) => st.state)).toBe("COMPLETED");
        return (await broker.output(job.jobId)).text;
      };
      // The run's network question, pending (the work sandbox's start asks it).
      const asked = gate.ask(
        { action: "network", summary: "start the work sandbox with network access", detail: "x" },
        { once: true },
      );
      const pending = await until(() => pendingApprovals(home).length === 1, 10_000);
      expect(pending).toBe(true);
      expect(await interfaces()).toBe("interfaces=1\n");
      const id = pendingApprovals(home)[0]?.request.id ?? "";
      decide(home, runId, id, false, "no network", "carol");
      expect((await asked).approved).toBe(false);
      expect(await interfaces()).toBe("interfaces=1\n");
      // A later approved request (a resumed run asked again): the job gets its own network.
      appendApprovalLine(join(home, "runs", runId, "approvals.jsonl"), {
        ...(pendingApprovals(home)[0]?.request ?? readLastRequest(home, runId)),
        id: `${id}-2`,
      });
      decide(home, runId, `${id}-2`, true, undefined, "carol");
      expect(gate.runWideApproved("network")).toBe(true);
      expect(await interfaces()).toBe("interfaces=2\n");
    }, 300_000);
  },
);

function readLastRequest(home: string, runId: string): ApprovalRequest {
  const lines = readApprovalLines(join(home, "runs", runId, "approvals.jsonl"));
  const last = lines.filter((l): l is ApprovalRequest => l.type === "request").at(-1);
  if (!last) throw new Error("no request");
  return last;
}
