// Human approval with the real CLI, real Docker sandboxes and the real SLURM cluster, scripted model
// (labelled scripted): `scifi run` waits at a gated action; `scifi approvals`, `scifi approve` and
// `scifi deny` decide from another process. A submit_job request approved (the job runs), denied (the
// agent reads the reason and goes on), left to time out (blocked, exit 3); `finish` confirming a
// PASS; an agent that tries to write the decision itself through every tool (it cannot).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApprovalView, pendingApprovals, runApprovals } from "../../runner/approval/store.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";
import { unfoldText } from "./unfold.ts";

const CLI = join(REPO, "bin", "scifi.js");
const FIXTURES = join(REPO, "test", "fixtures", "approval");
const roots: string[] = [];

interface Ws {
  root: string;
  home: string;
  taskDir: string;
  sam: string;
}

function workspace(sam: string, edit: (text: string) => string = (t) => t): Ws {
  const root = mkdtempSync(join(tmpdir(), "scifi-approval-e2e-"));
  roots.push(root);
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  mkdirSync(taskDir);
  writeFileSync(join(taskDir, "task.md"), edit(readFileSync(join(FIXTURES, sam), "utf8")));
  return { root, home, taskDir, sam: join(taskDir, "task.md") };
}

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function scifiRun(ws: Ws, script: string): Running {
  let out = "";
  const child = spawn(process.execPath, [CLI, "run", ws.sam, "--model", `scripted:${script}`], {
    cwd: ws.root,
    env: { ...process.env, SCIFI_HOME: ws.home, SCIFI_APPROVAL_POLL_MS: "200" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  return { child, output: () => out, exited: new Promise((r) => child.once("exit", (code) => r(code))) };
}

function scifi(ws: Ws, args: string[]): { code: number; stdout: string; stderr: string } {
  try {
    const stdout = execFileSync(process.execPath, [CLI, ...args], {
      env: { ...process.env, SCIFI_HOME: ws.home },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { code: 0, stdout, stderr: "" };
  } catch (error) {
    const e = error as { status: number; stdout: string; stderr: string };
    return { code: e.status, stdout: e.stdout, stderr: e.stderr };
  }
}

async function pending(ws: Ws, run: Running): Promise<ApprovalView> {
  for (let i = 0; i < 600; i++) {
    const found = pendingApprovals(ws.home)[0];
    if (found) return found;
    if (run.child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no approval request appeared:\n${run.output()}`);
}

/** Running containers of a run (their `scifi.run` label is the run id plus the phase). */
function runningSandboxes(runId: string): string[] {
  return execFileSync("docker", ["ps", "--filter", "label=scifi=1", "--format", '{{.Label "scifi.run"}}'], {
    encoding: "utf8",
  })
    .split("\n")
    .filter((label) => label.startsWith(runId));
}

function approvalHistory(ws: Ws, runId: string) {
  return readHistory(join(ws.home, "runs", runId, "history.jsonl")).filter((e) => e.type === "approval");
}

function approvalEvents(ws: Ws, runId: string) {
  return readTape(join(ws.home, "runs", runId, "audit.jsonl")).filter(
    (r) => r.kind === "event" && r.event.startsWith("approval_"),
  );
}

describe.skipIf(!hasEngine("docker"))("approval gate, real CLI and Docker (scripted agent)", () => {
  afterAll(() => {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });

  it("finish: a PASS waits as `awaiting approval` until a person approves, then the run passes", async () => {
    const ws = workspace("finish.md");
    const run = scifiRun(ws, join(FIXTURES, "finish.yaml"));
    const request = await pending(ws, run);
    expect(request.request).toMatchObject({
      action: "finish",
      why: "the task's SAM asks for approval of 'finish'",
    });
    expect(request.request.detail).toContain("PASS");
    // Rows are folded at 80 columns (a38); the lines they were folded from are read here.
    const listed = { stdout: unfoldText(scifi(ws, ["approvals"]).stdout) };
    expect(listed.stdout).toContain(`${request.runId} ${request.request.id}  finish:`);
    // Each check with its evidence, not only PASS: stage, exit code, duration, sandbox, output.
    expect(listed.stdout).toMatch(
      new RegExp(
        `\\| PASS root/check-1 \\(run stage\\): exit 0, [\\d.]+ m?s, sandbox ${request.runId}-checks\\d+\\n {2}\\|     > `,
      ),
    );
    // `scifi status` lists the waiting `scifi run` too (it is no daemon task).
    const status = scifi(ws, ["status"]).stdout.replace(/\n {2}\+ /g, ""); // folded rows joined back
    expect(status).toMatch(new RegExp(`${request.runId}\\s+awaiting approval\\s+1\\s+${request.request.id}`));
    expect(JSON.parse(scifi(ws, ["status", "--json"]).stdout).awaitingRuns).toEqual([
      { run: request.runId, awaiting: [request.request.id], iteration: 1, phase: expect.any(String) },
    ]);
    // No sandbox runs while the run waits.
    expect(runningSandboxes(request.runId)).toEqual([]);
    expect(scifi(ws, ["approve", request.runId, request.request.id, "--note", "plot checked"]).code).toBe(0);
    expect(await run.exited, run.output()).toBe(0);
    const history = approvalHistory(ws, request.runId);
    expect(history.map((e) => e.type === "approval" && e.state)).toEqual(["requested", "approved"]);
    expect(history[1]).toMatchObject({ note: "plot checked" });
    expect(approvalEvents(ws, request.runId).map((r) => r.kind === "event" && r.event)).toEqual([
      "approval_requested",
      "approval_approved",
    ]);
    // The report shows the request with its decision, who and when.
    const page = readFileSync(scifi(ws, ["report", request.runId]).stdout.trim(), "utf8");
    expect(page).toContain('<h2 id="approvals">Approvals</h2>');
    expect(page).toMatch(
      new RegExp(`${request.request.id}</td><td>finish</td>.*approved by \\S+ at 20\\d\\d-`),
    );
    expect(page).toContain("plot checked");
    // Deciding twice is refused.
    expect(scifi(ws, ["deny", request.runId, request.request.id, "--reason", "late"]).code).toBe(2);
  }, 300_000);

  it("run: the task waits before it starts; denied, it ends blocked (exit 3) and no sandbox ever started", async () => {
    const ws = workspace("finish.md", (t) => t.replace("approval: [finish]", "approval: [run]"));
    const run = scifiRun(ws, join(FIXTURES, "finish.yaml"));
    const request = await pending(ws, run);
    expect(request.request).toMatchObject({ action: "run", iteration: 0 });
    expect(scifi(ws, ["deny", request.runId, request.request.id, "--reason", "not tonight"]).code).toBe(0);
    expect(await run.exited, run.output()).toBe(3);
    const state = JSON.parse(readFileSync(join(ws.home, "runs", request.runId, "state.json"), "utf8"));
    expect(state.outcome.reason).toContain("not tonight");
    expect(state.iteration).toBe(0);
    expect(existsSync(join(ws.taskDir, "out.txt"))).toBe(false);
  }, 300_000);

  for (const approve of [true, false]) {
    it(`network: ${approve ? "approved, the work sandbox has a network interface" : "denied, the work sandbox starts with only lo"}`, async () => {
      const ws = workspace("network.md");
      const run = scifiRun(ws, join(FIXTURES, "network.yaml"));
      const request = await pending(ws, run);
      expect(request.request.action).toBe("network");
      const args = approve
        ? ["approve", request.runId, request.request.id]
        : ["deny", request.runId, request.request.id, "--reason", "no downloads"];
      expect(scifi(ws, args).code).toBe(0);
      expect(await run.exited, run.output()).toBe(0);
      const nets = readFileSync(join(ws.taskDir, "nets.txt"), "utf8").trim().split("\n");
      if (approve) expect(nets.filter((n) => n !== "lo").length).toBeGreaterThan(0);
      else expect(nets).toEqual(["lo"]);
      // Asked once a run: one request however many sandboxes started.
      expect(runApprovals(ws.home, request.runId)).toHaveLength(1);
    }, 300_000);
  }

  it("the agent cannot approve itself: it writes a decision through bash, write_file and edit_file; the request times out blocked (exit 3)", async () => {
    const ws = workspace("finish.md", (t) => t.replace("approval_timeout: 10m", "approval_timeout: 25s"));
    const script = join(ws.root, "self-approve.yaml");
    writeFileSync(
      script,
      readFileSync(join(FIXTURES, "self-approve.yaml"), "utf8")
        .replaceAll("@HOME@", ws.home)
        .replaceAll("@RUNS@", join(ws.home, "runs")),
    );
    const run = scifiRun(ws, script);
    const request = await pending(ws, run);
    expect(await run.exited, run.output()).toBe(3);
    expect(run.output()).toContain(`approval request ${request.request.id}`);
    const lines = readFileSync(join(ws.home, "runs", request.runId, "approvals.jsonl"), "utf8");
    expect(lines).not.toContain('"type":"decision"');
    expect(runApprovals(ws.home, request.runId)[0]?.state).toBe("timed_out");
    expect(approvalHistory(ws, request.runId).map((e) => e.type === "approval" && e.state)).toEqual([
      "requested",
      "timed_out",
    ]);
    const page = readFileSync(scifi(ws, ["report", request.runId]).stdout.trim(), "utf8");
    expect(page).toContain("timed out at");
    // Nothing the agent wrote landed in the home (the run folder is never mounted).
    expect(existsSync(join(ws.home, "runs", "approvals.jsonl"))).toBe(false);
  }, 300_000);
});

describe.skipIf(!hasEngine("slurm") || !hasEngine("docker"))(
  "approval of submit_job, real CLI, Docker and SLURM (scripted agent)",
  () => {
    beforeAll(() => {
      execFileSync("bash", [join(REPO, "scripts", "build-image.sh"), "--base-only"], { stdio: "inherit" });
    }, 1_200_000);

    it("approved: the request shows the script and resources; after `scifi approve` the job runs and the run passes", async () => {
      const ws = workspace("task.md");
      const run = scifiRun(ws, join(REPO, "test", "fixtures", "slurm", "agent-pass.yaml"));
      const request = await pending(ws, run);
      const listed = JSON.parse(scifi(ws, ["approvals", "--json"]).stdout) as {
        action: string;
        detail: string;
      }[];
      expect(listed).toHaveLength(1);
      expect(listed[0]?.action).toBe("submit_job");
      expect(listed[0]?.detail).toContain("for ((i = 1; i <= n; i++))");
      // Arguments shell-quoted (a newline in one could not fake a line), here a plain word.
      expect(listed[0]?.detail).toContain("# args: 100\n");
      // The work sandbox is stopped while the request waits.
      for (let i = 0; i < 40 && runningSandboxes(request.runId).length > 0; i++)
        await new Promise((r) => setTimeout(r, 250));
      expect(runningSandboxes(request.runId)).toEqual([]);
      // Nothing is submitted before the decision.
      expect(existsSync(join(ws.home, "runs", request.runId, "jobs", "jobs.json"))).toBe(false);
      expect(scifi(ws, ["approve", request.runId, request.request.id]).code).toBe(0);
      expect(await run.exited, run.output()).toBe(0);
      expect(readFileSync(join(ws.taskDir, "answer.txt"), "utf8")).toBe("5050\n");
      const jobs = JSON.parse(
        readFileSync(join(ws.home, "runs", request.runId, "jobs", "jobs.json"), "utf8"),
      );
      expect(jobs.jobs).toHaveLength(1);
      expect(approvalHistory(ws, request.runId).map((e) => e.type === "approval" && e.state)).toEqual([
        "requested",
        "approved",
      ]);
    }, 300_000);

    it("denied: the agent gets the reason as its tool result, takes another way, and the run passes with no job", async () => {
      const ws = workspace("task.md");
      const run = scifiRun(ws, join(FIXTURES, "deny.yaml"));
      const request = await pending(ws, run);
      expect(
        scifi(ws, ["deny", request.runId, request.request.id, "--reason", "too costly tonight"]).code,
      ).toBe(0);
      expect(await run.exited, run.output()).toBe(0);
      const history = readHistory(join(ws.home, "runs", request.runId, "history.jsonl"));
      expect(history.filter((e) => e.type === "job").map((e) => e.type === "job" && e.decision)).toContain(
        "refused",
      );
      expect(history.find((e) => e.type === "approval" && e.state === "denied")).toMatchObject({
        note: "too costly tonight",
      });
      const page = readFileSync(scifi(ws, ["report", request.runId]).stdout.trim(), "utf8");
      expect(page).toMatch(/submit_job<\/td>.*denied by \S+ at .*too costly tonight/);
      const jobsFile = join(ws.home, "runs", request.runId, "jobs", "jobs.json");
      const jobs = existsSync(jobsFile) ? (JSON.parse(readFileSync(jobsFile, "utf8")).jobs as unknown[]) : [];
      expect(jobs).toEqual([]);
    }, 300_000);

    it("left to time out: the run ends blocked (exit 3) naming the request, and nothing was submitted", async () => {
      const ws = workspace("task.md", (t) => t.replace("approval_timeout: 10m", "approval_timeout: 5s"));
      const run = scifiRun(ws, join(REPO, "test", "fixtures", "slurm", "agent-pass.yaml"));
      const request = await pending(ws, run);
      expect(await run.exited, run.output()).toBe(3);
      expect(run.output()).toContain(request.request.id);
      const state = JSON.parse(readFileSync(join(ws.home, "runs", request.runId, "state.json"), "utf8"));
      expect(state.outcome).toMatchObject({ status: "blocked" });
      expect(state.outcome.reason).toContain(request.request.id);
      expect(scifi(ws, ["approvals"]).stdout).toContain("no approval requests are waiting");
      expect(existsSync(join(ws.home, "runs", request.runId, "jobs", "jobs.json"))).toBe(false);
    }, 300_000);
  },
);

/** `scifi run` of the finish task in a pseudo-terminal (`script`: stdin and stderr are TTYs), once it asks. */
async function runInTerminal(ws: Ws): Promise<Running> {
  const command = `${process.execPath} ${CLI} run ${ws.sam} --model scripted:${join(FIXTURES, "finish.yaml")}`;
  let out = "";
  const child = spawn("script", ["-qec", command, "/dev/null"], {
    cwd: ws.root,
    env: { ...process.env, SCIFI_HOME: ws.home, SCIFI_APPROVAL_POLL_MS: "200" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  for (let i = 0; i < 600 && !out.includes("approve? [y/n]"); i++)
    await new Promise((r) => setTimeout(r, 250));
  return { child, output: () => out, exited };
}

describe.skipIf(!hasEngine("docker") || !existsSync("/usr/bin/script"))("scifi run in a terminal", () => {
  it("shows the request and takes y from the terminal; the run passes with the decision recorded", async () => {
    const ws = workspace("finish.md");
    const { child, output, exited } = await runInTerminal(ws);
    expect(output()).toContain("approval request finish-");
    child.stdin?.write("y\r");
    expect(await exited, output()).toBe(0);
    const runId =
      readdirSync(join(ws.home, "runs")).find((d) =>
        existsSync(join(ws.home, "runs", d, "approvals.jsonl")),
      ) ?? "";
    expect(runApprovals(ws.home, runId).map((v) => v.state)).toEqual(["approved"]);
    expect(approvalHistory(ws, runId).at(-1)).toMatchObject({ state: "approved", who: userInfo().username });
  }, 300_000);

  it("decided from another shell meanwhile: the prompt is withdrawn saying who decided, and when", async () => {
    const ws = workspace("finish.md");
    const { output, exited } = await runInTerminal(ws);
    const request = pendingApprovals(ws.home)[0];
    expect(request, output()).toBeDefined();
    if (!request) return;
    expect(scifi(ws, ["approve", request.runId, request.request.id]).code).toBe(0);
    expect(await exited, output()).toBe(0);
    expect(output()).toMatch(
      new RegExp(
        `approval request ${request.request.id}: no longer asked here \\(approved by ${userInfo().username} at \\d{4}-\\d\\d-\\d\\dT`,
      ),
    );
  }, 300_000);
});
