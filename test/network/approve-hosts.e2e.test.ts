// Approving a host at run time, end to end on Docker: a real run (the same wiring as `scifi run`,
// scripted model, labelled scripted) of a SAM with `network: [data.test:8000]` and
// `approval: [network]`, its proxy pinning the test host's names (a container on a network of its
// own). The agent's first fetch of other.test (allowed by the site, not listed) is refused with a
// reason naming the request; `scifi approve` (the real CLI, another process) approves it; the next
// fetch in the same sandbox succeeds; the second iteration's fresh work sandbox reaches it at once;
// a host the site does not allow gets no request.
import { execFileSync, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApprovalView, pendingApprovals, runApprovals } from "../../runner/approval/store.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { readHistory } from "../../runner/memory/history.ts";
import type { RunResult } from "../../runner/run/deps.ts";
import { runTask } from "../../runner/run/setup.ts";
import { createDockerBackend } from "../../runner/sandbox/docker.ts";
import { hasEngine } from "../helpers/engines.ts";
import { killChild, REPO, waitFor } from "../loop/harness.ts";
import { type TestNet, testNet } from "./test-hosts.ts";

const haveDocker = hasEngine("docker");
const IMAGE = "scifi-sci:local";
const SUBNET = "10.213.61.0/24";
const stamp = `${process.pid}-${Date.now()}`;
const TEST_NET = `scifi-approvehost-${stamp}`;
const HOST_NAME = `scifi-approvehost-host-${stamp}`;
const FIXTURES = join(REPO, "test", "fixtures", "network");
const CLI = join(REPO, "bin", "scifi.js");
const resolverHosts: Record<string, string[]> = {};
let root = "";
let net: TestNet | undefined;

describe.skipIf(!haveDocker)("a host approved at run time (docker, real proxy)", () => {
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "scifi-approvehost-"));
    net = await testNet(TEST_NET, SUBNET, IMAGE);
    const ip = await net.host({ name: HOST_NAME });
    for (const name of ["data.test", "other.test", "far.example"]) resolverHosts[name] = [ip];
  }, 120_000);

  afterAll(async () => {
    await net?.remove();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it("refused with a request named; `scifi approve`; the same sandbox, then a later one, reach it; a site-denied host gets no request", async () => {
    const home = join(root, "home");
    const taskDir = join(root, "task");
    mkdirSync(home);
    mkdirSync(taskDir);
    copyFileSync(join(FIXTURES, "approve-host.md"), join(taskDir, "task.md"));
    copyFileSync(resolve("test/network/probe.py"), join(taskDir, "probe.py"));
    const site = join(home, "site-policy.yaml");
    writeFileSync(
      site,
      ['allowedHosts: ["*.test:8000"]', "deniedHosts: []", `allowedPrivateRanges: ["${SUBNET}"]`, ""].join(
        "\n",
      ),
    );
    process.env.SCIFI_APPROVAL_POLL_MS = "200";
    let runId = "";
    const running: Promise<RunResult> = runTask({
      home,
      task: join(taskDir, "task.md"),
      sitePolicy: site,
      model: `scripted:${join(FIXTURES, "approve-host.yaml")}`,
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      sandboxBackend: createDockerBackend({ proxy: { hosts: resolverHosts, systemResolver: false } }),
      onRunId: (id) => {
        runId = id;
      },
    });
    const failed = running.then(
      () => undefined,
      (e: unknown) => e,
    );
    const approve = (id: string) =>
      execFileSync(process.execPath, [CLI, "approve", runId, id, "--note", "the archive is fine"], {
        env: { ...process.env, SCIFI_HOME: home },
        encoding: "utf8",
      });
    const pendingOne = (pick: (v: ApprovalView) => boolean) =>
      waitFor(() => {
        if (!runId) return undefined;
        return runApprovals(home, runId).find((v) => v.state === "pending" && pick(v));
      }, 240_000);

    // The sandbox with network starts only after a person says yes (asked once a run).
    const start = await pendingOne((v) => v.request.facts.kind !== "network-host");
    approve(start.request.id);
    // The first fetch of other.test files a request without waiting; the refusal names it.
    const host = await pendingOne((v) => v.request.facts.kind === "network-host");
    expect(host.request).toMatchObject({
      action: "network",
      waits: false,
      facts: { host: "other.test", port: "8000", rule: "other.test:8000" },
    });
    // Waits for the whole reply: the agent's redirect creates first.txt before curl writes it.
    const first = await waitFor(() => {
      try {
        const text = readFileSync(join(taskDir, "first.txt"), "utf8");
        return text.includes("retry after") ? text : undefined;
      } catch {
        return undefined;
      }
    }, 60_000);
    expect(first).toContain(
      `NO 403 scifi network proxy: refused other.test:8000: other.test:8000 is not on this task's network list (allowed: data.test:8000); approval request ${host.request.id} was filed`,
    );
    expect(first).toContain(`${host.request.id} was filed: retry after a person approves it`);
    approve(host.request.id);
    const result = await running.catch(async () => {
      throw await failed;
    });

    expect(result.outcome.status, result.outcome.reason).toBe("passed");
    expect(readFileSync(join(taskDir, "listed.txt"), "utf8")).toContain(
      "OK hello from data.test:8000/listed",
    );
    // The same sandbox, after the approval (the loop kept fetching), then the second iteration's.
    expect(readFileSync(join(taskDir, "second.txt"), "utf8")).toContain(
      "OK hello from other.test:8000/second",
    );
    expect(readFileSync(join(taskDir, "third.txt"), "utf8")).toContain("OK hello from other.test:8000/third");
    // A host the site's allowedHosts do not cover: refused, and no request.
    expect(readFileSync(join(taskDir, "site-denied.txt"), "utf8")).toMatch(
      /NO 403 .*do not include far.example:8000, so no approval can be asked for it/,
    );
    const views = runApprovals(home, runId);
    expect(views.map((v) => [v.request.facts.host ?? "(start)", v.state])).toEqual([
      ["(start)", "approved"],
      ["other.test", "approved"],
    ]);

    const history = readHistory(join(result.dir, "history.jsonl"));
    const approvals = history.filter((e) => e.type === "approval" && e.id === host.request.id);
    expect(approvals.map((e) => e.type === "approval" && e.state)).toEqual(["requested", "approved"]);
    const used = history.filter((e) => e.type === "approved_host_used");
    expect(used).toHaveLength(1);
    expect(used[0]).toMatchObject({ id: host.request.id, rule: "other.test:8000", host: "other.test" });
    const net = history.filter((e) => e.type === "network" && e.host === "other.test");
    expect(net.some((e) => e.type === "network" && !e.allowed && e.rule === "not-listed")).toBe(true);
    const allowed = net.filter((e) => e.type === "network" && e.allowed);
    expect(allowed.map((e) => e.type === "network" && e.rule)).toEqual([
      "allow other.test:8000",
      "allow other.test:8000",
    ]);
    // Two work sandboxes (iterations 1 and 2) each reached it.
    expect(new Set(allowed.map((e) => e.type === "network" && e.sandbox)).size).toBe(2);
    const events = readTape(join(result.dir, "audit.jsonl"))
      .filter((r) => r.kind === "event")
      .map((r) => (r.kind === "event" ? r.event : ""));
    expect(events).toEqual(
      expect.arrayContaining(["approval_requested", "approval_approved", "approved_host_used"]),
    );
  }, 600_000);

  it("a resumed run reaches a host approved before (the real CLI, SIGKILLed; the approval is derived from approvals.jsonl)", async () => {
    const ws = join(root, "resume");
    const home = join(ws, "home");
    const taskDir = join(ws, "task");
    mkdirSync(home, { recursive: true });
    mkdirSync(taskDir);
    copyFileSync(join(FIXTURES, "approve-host.md"), join(taskDir, "task.md"));
    copyFileSync(resolve("test/network/probe.py"), join(taskDir, "probe.py"));
    const site = join(home, "site-policy.yaml");
    writeFileSync(site, `allowedHosts: ["*.test:8000"]\nallowedPrivateRanges: ["${SUBNET}"]\n`);
    const env = { ...process.env, SCIFI_HOME: home, SCIFI_APPROVAL_POLL_MS: "200" };
    // The first process: the real `scifi run` (its proxy resolves nothing here: the request is
    // filed before any lookup, which is all this process needs to do).
    const child = spawn(
      process.execPath,
      [
        CLI,
        "run",
        join(taskDir, "task.md"),
        "--model",
        `scripted:${join(FIXTURES, "approve-host-resume-1.yaml")}`,
      ],
      { cwd: ws, env, stdio: "ignore" },
    );
    try {
      const approve = (runId: string, id: string) =>
        execFileSync(process.execPath, [CLI, "approve", runId, id], { env, encoding: "utf8" });
      const pendingOne = (pick: (v: ApprovalView) => boolean) =>
        waitFor(() => pendingApprovals(home).find(pick), 240_000);
      const start = await pendingOne((v) => v.request.facts.kind !== "network-host");
      approve(start.runId, start.request.id);
      const host = await pendingOne((v) => v.request.facts.kind === "network-host");
      await waitFor(() => (existsSync(join(taskDir, "first.txt")) ? true : undefined), 60_000);
      expect(readFileSync(join(taskDir, "first.txt"), "utf8")).toContain(
        `approval request ${host.request.id} was filed`,
      );
      approve(host.runId, host.request.id);
      // The process dies before it takes the decision up (the scripted work hangs meanwhile).
      await killChild(child);

      const result = await runTask({
        home,
        resume: host.runId,
        sitePolicy: site,
        model: `scripted:${join(FIXTURES, "approve-host-resume-2.yaml")}`,
        retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
        sandboxBackend: createDockerBackend({ proxy: { hosts: resolverHosts, systemResolver: false } }),
      });
      expect(result.outcome.status, result.outcome.reason).toBe("passed");
      expect(readFileSync(join(taskDir, "second.txt"), "utf8")).toContain(
        "OK hello from other.test:8000/second",
      );
      expect(readFileSync(join(taskDir, "third.txt"), "utf8")).toContain(
        "OK hello from other.test:8000/third",
      );
      // Asked once each: the start's network and the host; the resume asked nothing again.
      expect(runApprovals(home, host.runId).map((v) => [v.request.id, v.state, v.used])).toEqual([
        [start.request.id, "approved", true],
        [host.request.id, "approved", true],
      ]);
      const history = readHistory(join(result.dir, "history.jsonl"));
      const resumedAt = history.findIndex((e) => e.type === "resumed");
      const after = history.slice(resumedAt);
      // The decision is on the audit tape once, taken up by whichever process saw it first (the one
      // killed, or the one that resumed the run).
      const decided = readTape(join(result.dir, "audit.jsonl")).filter(
        (r) => r.kind === "event" && r.event === "approval_approved" && r.data?.id === host.request.id,
      );
      expect(decided).toHaveLength(1);
      expect(after.filter((e) => e.type === "approved_host_used")).toHaveLength(1);
    } finally {
      if (child.exitCode === null && child.signalCode === null) await killChild(child);
    }
  }, 600_000);
});
