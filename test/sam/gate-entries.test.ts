// The one gate (runner/sam/gate.ts): every way a SAM enters refuses what `scifi validate` reports as
// an error, before anything is made. A table of SAM problems (a missing Expectation, an unknown key
// with "did you mean", a compare stage reading a non-output in both spellings, a bad check option,
// a missing check asset, and an unknown skill, which validate checks beyond the parser) crossed
// with every entry point: `scifi run`, `scifi run --resume` (the SAM as recorded at the run's
// start), `scifi eval` (task.md and variant files) and `scifi eval --resume`, the daemon's inbox,
// `scifi submit`, `make-task`'s draft; `scifi import`'s output with the problem its input can
// carry (the importer writes the rest of the SAM itself). Each asserts exit 2 (or the daemon's
// rejection) with the file:line:col diagnostics, and that nothing was created. Nothing reaches a
// sandbox: no Docker or SLURM is needed. About 20 s of CPU (19 CLI processes, the rest in process).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMakeTask } from "../../runner/helpers/make-task/command.ts";
import { exitCodeOf, InvalidInput } from "../../runner/run/session/errors.ts";
import { runTask } from "../../runner/run/setup.ts";
import { formatDiagnostic } from "../../runner/sam/diagnostics.ts";
import { sha256 } from "../../runner/sha256.ts";

const REPO = new URL("../..", import.meta.url).pathname;
const CLI = join(REPO, "bin", "scifi.js");
const exec = promisify(execFile);
const TOP = mkdtempSync(join(tmpdir(), "scifi-gate-"));

interface Problem {
  name: string;
  /** The SAM's text (`task.md`); every task folder also holds checks/expected.txt. */
  sam: string;
  /** Line and column the diagnostic names, and its message's start. */
  at: string;
  message: string;
}

const EXPECTATION_WITH_STAGES = (stage: string) => `## Expectation
- answer.txt is right
  \`\`\`check outputs=result.txt
  cp answer.txt result.txt
  \`\`\`
  \`\`\`${stage}
  diff answer.txt checks/expected.txt
  \`\`\`
`;

const PROBLEMS: Problem[] = [
  {
    name: "missing-expectation",
    sam: "---\nname: missing-expectation\n---\n# T\n\n## To-do\nWrite answer.txt.\n",
    at: "4:1",
    message: "SAM `T` has no Expectation section",
  },
  {
    name: "unknown-key",
    sam: "---\nname: unknown-key\nwalltme: 1h\n---\n# T\n\n## To-do\nWrite answer.txt.\n\n## Expectation\n- answer.txt holds 42\n",
    at: "3:1",
    message: "unknown metadata key `walltme`; did you mean `walltime`?",
  },
  {
    name: "compare-read",
    sam: `---\nname: compare-read\ncheck_assets: [checks/expected.txt]\n---\n# T\n\n## To-do\nWrite answer.txt.\n\n${EXPECTATION_WITH_STAGES("compare")}`,
    at: "15:1",
    message: "a compare stage reads `answer.txt`, which is neither a check asset nor under outputs/",
  },
  {
    name: "hidden-read",
    sam: `---\nname: hidden-read\ncheck_assets: [checks/expected.txt]\n---\n# T\n\n## To-do\nWrite answer.txt.\n\n${EXPECTATION_WITH_STAGES("check hidden")}`,
    at: "15:1",
    message: "a compare stage reads `answer.txt`, which is neither a check asset nor under outputs/",
  },
  {
    name: "bad-option",
    sam: "---\nname: bad-option\n---\n# T\n\n## To-do\nWrite answer.txt.\n\n## Expectation\n- answer.txt exists\n  ```check timeot=5m\n  test -f answer.txt\n  ```\n",
    at: "11:3",
    message: "unknown check option `timeot=5m`",
  },
  {
    // A check `scifi validate` runs beyond the parser (the skills library): the gate has it too.
    name: "unknown-skill",
    sam: "---\nname: unknown-skill\nskills: [pyhton-data]\n---\n# T\n\n## To-do\nWrite answer.txt.\n\n## Expectation\n- answer.txt holds 42\n",
    at: "3:10",
    message: "unknown skill 'pyhton-data' (did you mean 'python-data'?)",
  },
  {
    name: "missing-asset",
    sam: "---\nname: missing-asset\ncheck_assets: [checks/missing.txt]\n---\n# T\n\n## To-do\nWrite answer.txt.\n\n## Expectation\n- answer.txt is right\n  ```check\n  diff answer.txt checks/missing.txt\n  ```\n",
    at: "3:16",
    message: "check asset `checks/missing.txt` does not exist",
  },
];

/** A task folder holding the problem's SAM as `samName` and checks/expected.txt. */
function taskFolder(parent: string, problem: Problem, samName = "task.md"): string {
  const dir = join(parent, problem.name);
  mkdirSync(join(dir, "checks"), { recursive: true });
  writeFileSync(join(dir, "checks", "expected.txt"), "42\n");
  writeFileSync(join(dir, samName), problem.sam);
  return dir;
}

/** Every path under `dir` with its content hash (folders as such): equal before and after = nothing made. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const rel = relative(dir, path);
      if (statSync(path).isDirectory()) {
        out[`${rel}/`] = "dir";
        walk(path);
      } else out[rel] = sha256(readFileSync(path));
    }
  };
  walk(dir);
  return out;
}

function home(name: string): string {
  const dir = join(TOP, "homes", name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

async function scifi(h: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(process.execPath, [CLI, ...args], {
    env: { ...process.env, SCIFI_HOME: h },
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}

/** The diagnostic as `scifi validate` prints it, for the SAM at `file`. */
const diagnostic = (file: string, p: Problem) => `${file}:${p.at}: error: ${p.message}`;

const SCRIPT = join(TOP, "script.yaml");
writeFileSync(SCRIPT, "work: []\n");
// After every describe's own afterAll (the daemon is stopped first).
afterAll(() => rmSync(TOP, { recursive: true, force: true }));

// Each case spawns scifi processes that mostly wait on module loading: run side by side.
describe.concurrent("one gate: scifi run and submit refuse a SAM validate refuses, before anything is made", () => {
  it.each(PROBLEMS)("$name", async (problem) => {
    const parent = join(TOP, "run");
    const dir = taskFolder(parent, problem);
    const h = home(`run-${problem.name}`);
    const before = { home: tree(h), task: tree(dir) };
    const [run, submit] = await Promise.all([
      scifi(h, ["run", dir, "--model", `scripted:${SCRIPT}`]),
      scifi(h, ["submit", dir, "--model", `scripted:${SCRIPT}`]),
    ]);
    for (const r of [run, submit]) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(diagnostic(join(dir, "task.md"), problem));
    }
    expect(run.stderr).toContain("is not a valid SAM");
    expect(submit.stderr).toContain("is not a valid SAM");
    // No run folder, no submit record, no job script; the task folder as it was.
    expect(tree(h)).toEqual(before.home);
    expect(tree(dir)).toEqual(before.task);
  });
});

describe("one gate: scifi run --resume checks the SAM as recorded at the run's start", () => {
  /** A run folder as an older scifi left it: state, sam.json, spec, the pristine SAM and asset. */
  function recordedRun(h: string, problem: Problem): { runDir: string; taskDir: string } {
    const taskDir = taskFolder(join(TOP, "resume-tasks"), problem);
    // The task folder's SAM was fixed since; the recorded copy is what a resume would run.
    writeFileSync(join(taskDir, "task.md"), "# Fixed\n\n## To-do\nx\n\n## Expectation\n- y\n");
    const runId = `20260101-000000-${problem.name}`;
    const runDir = join(h, "runs", runId);
    mkdirSync(join(runDir, "pristine", "checks"), { recursive: true });
    writeFileSync(join(runDir, "pristine", "task.md"), problem.sam);
    writeFileSync(join(runDir, "pristine", "checks", "expected.txt"), "42\n");
    const state = {
      version: 1,
      runId,
      samFile: join(taskDir, "task.md"),
      samSha256: sha256(problem.sam),
      samFiles: [{ file: join(taskDir, "task.md"), sha256: sha256(problem.sam) }],
      pristine: {
        files: [
          { rel: "task.md", kind: "sam", hidden: false, sha256: sha256(problem.sam), mode: 0o644 },
          { rel: "checks/expected.txt", kind: "asset", hidden: false, sha256: sha256("42\n"), mode: 0o644 },
        ],
        folders: ["checks"],
      },
      taskFolderBaseBytes: 0,
      backend: "docker",
      model: `scripted:${SCRIPT}`,
      phase: "work",
      iteration: 1,
      attempts: {},
      completeNodes: [],
      workRank: 1,
      spent: { tokens: 0, usd: 0, elapsedMs: 0 },
      limits: { walltimeSec: 3600 },
      historyBytes: 0,
      resumes: 0,
    };
    writeFileSync(join(runDir, "state.json"), JSON.stringify(state));
    writeFileSync(join(runDir, "sam.json"), "{}\n");
    writeFileSync(join(runDir, "spec.json"), JSON.stringify({ taskDir }));
    writeFileSync(join(runDir, "history.jsonl"), "");
    return { runDir, taskDir };
  }

  /** What a resume leaves behind: home and task folder as they were, or the difference. */
  function unchanged(h: string, taskDir: string): () => void {
    const before = { home: tree(h), task: tree(taskDir) };
    return () => {
      // Nothing appended, locked, pruned or restored.
      expect(tree(h)).toEqual(before.home);
      expect(tree(taskDir)).toEqual(before.task);
    };
  }

  // In process (runTask is the one path `scifi run --resume` and the daemon take); the CLI's exit
  // code and printing are asserted once below.
  it.each(PROBLEMS)("$name", async (problem) => {
    const h = home(`resume-${problem.name}`);
    const { runDir, taskDir } = recordedRun(h, problem);
    const same = unchanged(h, taskDir);
    const error = await runTask({ home: h, resume: runDir.split("/").pop() ?? "" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInput);
    expect(exitCodeOf(error)).toBe(2);
    const refused = error as InvalidInput;
    expect(refused.message).toContain("cannot be resumed: its SAM as recorded at the run's start");
    // Named as the task folder's file, though read from the runner's copy.
    expect(refused.diagnostics.map(formatDiagnostic).join("\n")).toContain(
      diagnostic(join(taskDir, "task.md"), problem),
    );
    same();
  });

  it("the CLI exits 2 and prints the diagnostics", async () => {
    const problem = PROBLEMS[2] as Problem;
    const h = home("resume-cli");
    const { runDir, taskDir } = recordedRun(h, { ...problem, name: "cli" });
    const same = unchanged(h, taskDir);
    const r = await scifi(h, ["run", "--resume", runDir.split("/").pop() ?? ""]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("cannot be resumed: its SAM as recorded at the run's start");
    expect(r.stderr).toContain(diagnostic(join(taskDir, "task.md"), problem));
    same();
  });
});

describe("one gate: scifi eval refuses a suite holding a SAM validate refuses (task.md and variants)", () => {
  it("every problem is listed with its diagnostic; no eval folder", async () => {
    const suite = join(TOP, "suite");
    // Half as task.md, half as a variant file task.v1.md: both go through the gate.
    const dirs = PROBLEMS.map((p, i) => taskFolder(suite, p, i % 2 === 0 ? "task.md" : "task.v1.md"));
    const h = home("eval");
    const before = { home: tree(h), suite: tree(suite) };
    const r = await scifi(h, ["eval", suite, "--models", `scripted:${SCRIPT}`]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("the suite is not valid");
    PROBLEMS.forEach((p, i) => {
      const file = join(dirs[i] ?? "", i % 2 === 0 ? "task.md" : "task.v1.md");
      expect(r.stderr).toContain(`${file}:${p.at}: ${p.message}`);
    });
    expect(tree(h)).toEqual(before.home);
    expect(tree(suite)).toEqual(before.suite);
  });
});

describe("one gate: scifi eval --resume puts the planned SAMs through the gate again", () => {
  it("an eval whose unchanged SAMs this scifi refuses is not resumed; nothing is written", async () => {
    const suite = join(TOP, "resume-suite");
    const dirs = PROBLEMS.map((p) => taskFolder(suite, p));
    const h = home("eval-resume");
    const evalId = "20260101-000000-gate";
    const evalDir = join(h, "evals", evalId);
    mkdirSync(evalDir, { recursive: true });
    // The plan as a scifi with fewer rules wrote it: every variant file unchanged since.
    const plan = {
      version: 1,
      evalId,
      createdAt: "2026-01-01T00:00:00.000Z",
      suite,
      suiteName: "resume-suite",
      tasks: PROBLEMS.map((p, i) => ({
        name: p.name,
        dir: dirs[i],
        variants: [{ name: "default", file: join(dirs[i] ?? "", "task.md"), sha256: sha256(p.sam) }],
      })),
      models: [{ label: "s", slug: "s", specs: [`scripted:${SCRIPT}`], scripted: true }],
      repeats: 1,
      limits: {},
      budgetUsd: null,
      concurrency: 1,
      engine: "local",
      backend: "docker",
      trials: [],
    };
    writeFileSync(join(evalDir, "eval.json"), JSON.stringify(plan));
    const before = { home: tree(h), suite: tree(suite) };
    const r = await scifi(h, ["eval", "--resume", evalId]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("not valid under this scifi's rules, so it is not resumed");
    PROBLEMS.forEach((p, i) => {
      expect(r.stderr).toContain(diagnostic(join(dirs[i] ?? "", "task.md"), p));
    });
    expect(tree(h)).toEqual(before.home);
    expect(tree(suite)).toEqual(before.suite);
  });
});

describe("one gate: the daemon's inbox rejects a SAM validate refuses, with the diagnostics", () => {
  let daemon: ChildProcess | undefined;
  const h = home("daemon");
  const inbox = join(h, "tasks");
  let log = "";
  beforeAll(() => {
    mkdirSync(inbox, { recursive: true });
    // Built outside, then moved in whole (the inbox convention).
    const staging = join(TOP, "daemon-staging");
    for (const p of PROBLEMS) cpSync(taskFolder(staging, p), join(inbox, p.name), { recursive: true });
    daemon = spawn(
      process.execPath,
      [CLI, "daemon", "--model", `scripted:${SCRIPT}`, "--settle-ms", "200", "--log-format", "json"],
      { cwd: h, env: { ...process.env, SCIFI_HOME: h }, stdio: ["ignore", "pipe", "pipe"] },
    );
    daemon.stdout?.on("data", (d: Buffer) => {
      log += d.toString();
    });
    daemon.stderr?.on("data", (d: Buffer) => {
      log += d.toString();
    });
  });
  afterAll(async () => {
    if (!daemon || daemon.exitCode !== null) return;
    const exited = new Promise((resolve) => daemon?.once("exit", resolve));
    daemon.kill("SIGTERM");
    await exited;
  });

  it("every task is rejected, its .rejected.txt holds the diagnostic, and no run starts", async () => {
    const rejected = (p: Problem) => join(inbox, p.name, "task.rejected.txt");
    const recordOf = (p: Problem) => join(h, "daemon", "tasks", `${p.name}.json`);
    const deadline = Date.now() + 40_000;
    // The daemon writes the .rejected.txt as it judges an entry and the task's record just after.
    const done = (p: Problem) => existsSync(rejected(p)) && existsSync(recordOf(p));
    while (Date.now() < deadline && !PROBLEMS.every(done)) {
      if (daemon?.exitCode !== null) throw new Error(`the daemon exited: ${log}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    for (const p of PROBLEMS) {
      expect(existsSync(rejected(p)), `${p.name}: ${log}`).toBe(true);
      expect(readFileSync(rejected(p), "utf8")).toContain(diagnostic(join(inbox, p.name, "task.md"), p));
      const record = JSON.parse(readFileSync(recordOf(p), "utf8")) as {
        state: string;
        attempts: unknown[];
      };
      expect(record.state).toBe("rejected");
      expect(record.attempts).toEqual([]);
    }
    expect(existsSync(join(h, "runs"))).toBe(false);
  });
});

describe("one gate: make-task writes no draft that validate refuses, and exits 2", () => {
  it.each(PROBLEMS)("$name", async (problem) => {
    const h = home(`make-task-${problem.name}`);
    mkdirSync(join(h, "tasks"), { recursive: true });
    const cwd = join(TOP, "make-task", problem.name);
    // The draft's place holds checks/expected.txt, as the task folder would.
    mkdirSync(join(cwd, "checks"), { recursive: true });
    writeFileSync(join(cwd, "checks", "expected.txt"), "42\n");
    const script = join(cwd, "..", `${problem.name}.yaml`);
    const reply = { text: problem.sam };
    writeFileSync(
      script,
      `make_task:\n${[reply, reply, reply].map((r) => `  - text: ${JSON.stringify(r.text)}\n`).join("")}`,
    );
    const before = tree(cwd);
    const err: string[] = [];
    const code = await runMakeTask("Write answer.txt holding the answer, 42.", {
      model: `scripted:${script}`,
      env: { ...process.env, SCIFI_HOME: h },
      cwd,
      output: "task.md",
      out: () => undefined,
      err: (t) => err.push(t),
    });
    expect(code, err.join("")).toBe(2);
    expect(err.join("")).toContain(diagnostic(join(cwd, "task.md"), problem));
    expect(err.join("")).toContain("nothing was written");
    expect(tree(cwd)).toEqual(before);
  });
});

describe("one gate: scifi import's output is gated before it exists", () => {
  it("a Harbor task whose mapped SAM validate refuses leaves no output folder, nor the folders above it", async () => {
    const task = join(TOP, "harbor-task");
    cpSync(join(REPO, "test", "fixtures", "harbor", "word-count"), task, { recursive: true });
    // Harbor accepts any positive CPU count; a SAM's `cpus` does not: the mapped SAM is invalid.
    const toml = readFileSync(join(task, "task.toml"), "utf8");
    writeFileSync(join(task, "task.toml"), toml.replace(/^cpus = .*$/m, "cpus = 100000"));
    const out = join(TOP, "import-out", "a", "b");
    const h = home("import");
    const r = await scifi(h, ["import", "harbor", task, "-o", out]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("expected a positive number of CPUs, got `100000`");
    expect(existsSync(join(TOP, "import-out"))).toBe(false);
    // No staging folder left beside it either.
    expect(readdirSync(TOP).filter((n) => n.includes("importing"))).toEqual([]);
    expect(existsSync(dirname(out))).toBe(false);
  });
});
