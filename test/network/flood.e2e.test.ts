// The runner the agent cannot exhaust through its proxy, end to end on Docker: a real run (the same
// wiring as `scifi run`, scripted model, labelled scripted) of a SAM with `network: [data.test:8000]`
// whose work agent sends, from inside the sandbox, 20,000 unfinished request heads and then 20,000
// idle CONNECT tunnels to the proxy's socket (test/network/flood.py). The runner (this process)
// stays within the proxy's descriptor and memory caps while it happens, the agent's fetch after the
// flood still works, the run passes, and the history holds one flood record and no more than the
// record caps allow. The test host is a container on a network of this test's own.
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readHistory } from "../../runner/memory/history.ts";
import { DEFAULT_PROXY_LIMITS } from "../../runner/network/limits.ts";
import { runTask } from "../../runner/run/setup.ts";
import { createDockerBackend } from "../../runner/sandbox/docker.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";
import { type TestNet, testNet } from "./test-hosts.ts";

const haveDocker = hasEngine("docker");
const IMAGE = "scifi-sci:local";
const SUBNET = "10.213.62.0/24";
const stamp = `${process.pid}-${Date.now()}`;
const FIXTURES = join(REPO, "test", "fixtures", "network");
const resolverHosts: Record<string, string[]> = {};
let root = "";
let net: TestNet | undefined;

const descriptors = () => readdirSync("/proc/self/fd").length;

describe.skipIf(!haveDocker)("a sandbox flooding the run's proxy (docker, real run)", () => {
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "scifi-flood-"));
    net = await testNet(`scifi-flood-${stamp}`, SUBNET, IMAGE);
    resolverHosts["data.test"] = [await net.host({ name: `scifi-flood-host-${stamp}` })];
  }, 120_000);

  afterAll(async () => {
    await net?.remove();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it("20,000 unfinished heads and 20,000 idle tunnels: the runner stays within its caps, one flood record, the run passes", async () => {
    const home = join(root, "home");
    const taskDir = join(root, "task");
    mkdirSync(home);
    mkdirSync(taskDir);
    copyFileSync(join(FIXTURES, "flood.md"), join(taskDir, "task.md"));
    for (const f of ["flood.py", "probe.py"]) copyFileSync(resolve("test/network", f), join(taskDir, f));
    const site = join(home, "site-policy.yaml");
    writeFileSync(site, `allowedHosts: ["*.test:8000"]\nallowedPrivateRanges: ["${SUBNET}"]\n`);

    const baseFds = descriptors();
    const baseRss = process.memoryUsage().rss;
    let maxFds = baseFds;
    let maxRss = baseRss;
    const sample = setInterval(() => {
      maxFds = Math.max(maxFds, descriptors());
      maxRss = Math.max(maxRss, process.memoryUsage().rss);
    }, 50);
    let result: Awaited<ReturnType<typeof runTask>>;
    try {
      result = await runTask({
        home,
        task: join(taskDir, "task.md"),
        sitePolicy: site,
        model: `scripted:${join(FIXTURES, "flood.yaml")}`,
        retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
        sandboxBackend: createDockerBackend({ proxy: { hosts: resolverHosts, systemResolver: false } }),
      });
    } finally {
      clearInterval(sample);
    }
    expect(result.outcome.status, result.outcome.reason).toBe("passed");

    // What the agent saw: every connection was sent and nearly all were closed by the proxy at once.
    const [heads, tunnels] = ["heads.json", "tunnels.json"].map(
      (f) => JSON.parse(readFileSync(join(taskDir, f), "utf8")) as Record<string, number>,
    );
    for (const s of [heads, tunnels]) {
      expect(s?.sent).toBe(20_000);
      expect(s?.closed_by_proxy).toBeGreaterThanOrEqual(20_000 - DEFAULT_PROXY_LIMITS.maxConnections);
      expect(s?.still_open).toBeLessThanOrEqual(DEFAULT_PROXY_LIMITS.maxConnections);
    }
    expect(tunnels?.established).toBeGreaterThan(0);
    expect(readFileSync(join(taskDir, "after.txt"), "utf8")).toContain("OK hello from data.test:8000/after");

    // The runner: a client and an upstream descriptor per connection within the cap, plus what the
    // run itself opens; memory far from the 1 GB 15,000 heads took before the caps.
    console.log(
      `runner during the flood: +${maxFds - baseFds} descriptors, +${Math.round((maxRss - baseRss) / 1024 ** 2)} MB`,
    );
    expect(maxFds - baseFds).toBeLessThan(2 * DEFAULT_PROXY_LIMITS.maxConnections + 150);
    expect(maxRss - baseRss).toBeLessThan(250 * 1024 ** 2);

    const network = readHistory(join(result.dir, "history.jsonl")).filter((e) => e.type === "network");
    const floods = network.filter((e) => e.type === "network" && e.rule === "flood");
    expect(floods).toHaveLength(1);
    expect(floods[0]).toMatchObject({
      allowed: false,
      reason: expect.stringContaining("connections open at once"),
    });
    const caps = DEFAULT_PROXY_LIMITS.maxRecords;
    expect(network.length).toBeLessThanOrEqual(caps.allowed + caps.refused + caps.capture + caps.lookup + 1);
    expect(network.some((e) => e.type === "network" && e.allowed && e.host === "data.test")).toBe(true);
  }, 600_000);
});
