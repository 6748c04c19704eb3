// Every policy rule, each refusal with its exact message, against real folders and symlinks.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PolicyRefused } from "../../runner/policy/refused.ts";
import { resolveSpec } from "../../runner/policy/resolve.ts";
import { BUILTIN_SITE_POLICY, type SitePolicy } from "../../runner/policy/site.ts";
import { newRunId } from "../../runner/run-id.ts";
import type { MountRequest, SamDocument, SamMetadata } from "../../runner/sam/types.ts";
import { plainMetadata } from "../helpers/sam.ts";

const GiB = 1024 ** 3;
let base: string;
let home: string;
let dataRoot: string;

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "scifi-policy-")));
  home = join(base, "home");
  dataRoot = join(base, "data");
  for (const d of [join(home, "tasks"), join(home, "memory"), join(home, "runs"), join(dataRoot, "set1")]) {
    mkdirSync(d, { recursive: true });
  }
  writeFileSync(join(home, "memory", "global.md"), "memory\n");
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

/** A SAM file in a fresh task folder under <home>/tasks, as the parser would return it. */
function samIn(meta: Partial<SamMetadata> = {}, folder?: string): SamDocument {
  const dir = folder ?? mkdtempSync(join(home, "tasks", "t-"));
  const file = join(dir, "task.md");
  writeFileSync(file, "---\nname: demo\n---\n# To-do\nx\n# Expectation\ny\n");
  const metadata = plainMetadata(meta);
  const node = {
    id: "root",
    title: "demo",
    todo: "x",
    expectation: "y",
    items: [],
    children: [],
    source: { file, line: 1 },
  };
  return { file, sha256: "0".repeat(64), metadata, root: node, files: [{ file, sha256: "0".repeat(64) }] };
}

const site = (over: Partial<SitePolicy> = {}): SitePolicy => ({
  ...BUILTIN_SITE_POLICY,
  allowedMountRoots: [dataRoot],
  ...over,
});
const opts = { home: "", runId: "run-1", user: { uid: 1234, gid: 5678 }, hostCpus: 8 };
const mount = (host: string, container: string, mode: "ro" | "rw" = "ro", line = 7): MountRequest => ({
  host,
  container,
  mode,
  line,
});

function refusal(action: () => unknown): PolicyRefused {
  try {
    action();
  } catch (error) {
    if (error instanceof PolicyRefused) return error;
    throw error;
  }
  throw new Error("expected a PolicyRefused, but the policy granted the spec");
}

function resolveWith(sam: SamDocument, policy: SitePolicy = site()) {
  return resolveSpec(sam, policy, { ...opts, home });
}

describe("default-deny spec", () => {
  it("grants only the task folder (rw at /task) with the SAM file read-only over itself", () => {
    const sam = samIn();
    const spec = resolveWith(sam);
    const taskDir = realpathSync(join(sam.file, ".."));
    expect(spec).toEqual({
      runId: "run-1",
      image: "scifi-sci:local",
      user: { uid: 1234, gid: 5678 },
      taskDir,
      workdir: "/task",
      mounts: [
        { source: taskDir, target: "/task", readOnly: false, reason: "task folder" },
        { source: join(taskDir, "task.md"), target: "/task/task.md", readOnly: true, reason: "sam file" },
      ],
      network: false,
      gpus: 0,
      cpus: 2,
      memoryBytes: 4 * GiB,
      pidsLimit: 512,
      walltimeSec: 3600,
      env: { SCIFI_RUN_ID: "run-1", SCIFI_TASK: "demo", SCIFI_TASK_DIR: "/task" },
      labels: { "scifi.run": "run-1", "scifi.task": "demo" },
      taskFolderQuota: { maxAddBytes: 4 * GiB },
      home,
    });
  });

  it("runs the sandbox as the caller, or as the site's sandboxUser when the caller is root; the quota comes from the site", () => {
    const sam = samIn();
    const spec = resolveSpec(
      sam,
      { ...site(), sandboxUser: { uid: 4242, gid: 4343 }, maxTaskFolderBytes: 7 },
      {
        home,
        runId: "r",
        taskFolderBaseBytes: 100,
      },
    );
    const uid = process.getuid?.() ?? 0;
    expect(spec.user).toEqual(uid === 0 ? { uid: 4242, gid: 4343 } : { uid, gid: process.getgid?.() });
    expect(spec.user.uid).not.toBe(0);
    expect(spec.taskFolderQuota).toEqual({ maxAddBytes: 7, baseBytes: 100 });
  });

  it("binds sub-SAM files and check assets read-only over themselves, and grants what was asked", () => {
    const dir = mkdtempSync(join(home, "tasks", "t-"));
    mkdirSync(join(dir, "checks"));
    writeFileSync(join(dir, "checks", "expected.txt"), "42\n");
    writeFileSync(join(dir, "part.md"), "# sub\n");
    const sam = samIn(
      {
        checkAssets: ["checks/expected.txt"],
        network: true,
        cpus: 4,
        memoryBytes: 8 * GiB,
        walltimeSec: 7200,
        scratchBytes: GiB,
        image: "my:img",
        mounts: [mount("../../../data/set1", "/data/set1")],
      },
      dir,
    );
    sam.files.push({ file: join(dir, "part.md"), sha256: "1".repeat(64) });
    const spec = resolveWith(sam);
    expect(spec.mounts.slice(1)).toEqual([
      { source: join(dir, "task.md"), target: "/task/task.md", readOnly: true, reason: "sam file" },
      { source: join(dir, "part.md"), target: "/task/part.md", readOnly: true, reason: "sub-SAM file" },
      {
        source: join(dir, "checks", "expected.txt"),
        target: "/task/checks/expected.txt",
        readOnly: true,
        reason: "check asset",
      },
      {
        source: join(dataRoot, "set1"),
        target: "/data/set1",
        readOnly: true,
        reason: "declared mount (line 7)",
      },
    ]);
    expect(spec).toMatchObject({
      network: true,
      cpus: 4,
      memoryBytes: 8 * GiB,
      walltimeSec: 7200,
      image: "my:img",
      scratch: { target: "/scratch", sizeBytes: GiB },
    });
  });

  it("grants rw only when asked and allowed, and caps default cpus at the machine's", () => {
    const sam = samIn({ mounts: [mount(join(dataRoot, "set1"), "/out", "rw")] });
    const spec = resolveSpec(sam, site({ allowReadWriteMounts: true }), { ...opts, home, hostCpus: 1 });
    expect(spec.mounts.at(-1)).toMatchObject({ target: "/out", readOnly: false });
    expect(spec.cpus).toBe(1);
  });

  it("mints sortable run ids", () => {
    expect(newRunId("Fit the Peak!", new Date("2026-11-30T07:00:01.123Z"))).toMatch(
      /^20261130-070001-fit-the-peak-[0-9a-f]{6}$/,
    );
  });
});

describe("refusals: each names its rule, the path and what to do", () => {
  it("task-folder-denied: a SAM whose folder holds the runner's state", () => {
    const sam = samIn({}, home);
    const e = refusal(() => resolveWith(sam));
    expect(e.rule).toBe("task-folder-denied");
    expect(e.message).toBe(
      `policy refused [task-folder-denied] ${home}: the task folder contains the runner's state folder (runs/) (${home}/runs), and the whole task folder is mounted read-write. Move the SAM file into a folder of its own (for example <home>/tasks/<name>/).`,
    );
  });

  it("sam-file-outside-task: a SAM file that is a link out of its folder", () => {
    const elsewhere = mkdtempSync(join(base, "else-"));
    const real = samIn({}, elsewhere);
    const dir = mkdtempSync(join(home, "tasks", "t-"));
    symlinkSync(real.file, join(dir, "task.md"));
    const sam = { ...real, file: join(dir, "task.md") };
    const e = refusal(() => resolveWith(sam));
    expect(e.message).toBe(
      `policy refused [sam-file-outside-task] ${dir}/task.md: the sam file resolves to ${elsewhere}/task.md, outside the task folder ${dir}, so it cannot be shown read-only inside /task. Keep SAM files and check assets inside the task folder (a symlink out of it is not followed).`,
    );
  });

  it("task-file-missing: a check asset that does not exist", () => {
    const sam = samIn({ checkAssets: ["missing.csv"] });
    const dir = join(sam.file, "..");
    const e = refusal(() => resolveWith(sam));
    expect(e.message).toBe(
      `policy refused [task-file-missing] ${dir}/missing.csv: the check asset does not exist. Create it, or fix its path in the SAM (paths are relative to the SAM's folder).`,
    );
  });

  it("task-file-outside-task: a check asset outside the task folder", () => {
    writeFileSync(join(home, "tasks", "shared.csv"), "x\n");
    const sam = samIn({ checkAssets: ["../shared.csv"] });
    const dir = join(sam.file, "..");
    const e = refusal(() => resolveWith(sam));
    expect(e.message).toBe(
      `policy refused [task-file-outside-task] ${home}/tasks/shared.csv: the check asset resolves to ${home}/tasks/shared.csv, outside the task folder ${dir}, so it cannot be shown read-only inside /task. Keep SAM files and check assets inside the task folder (a symlink out of it is not followed).`,
    );
  });

  it("mount-target-invalid: a relative or unnormalised container path", () => {
    for (const target of ["data", "/data/../etc", "/data/"]) {
      const e = refusal(() => resolveWith(samIn({ mounts: [mount(dataRoot, target)] })));
      expect(e.message).toBe(
        `policy refused [mount-target-invalid] ${target}: mount '${dataRoot}' -> '${target}' (line 7): the container path must be absolute and normalised (no '..', '.', '//' or trailing '/'). Write it like /data/input.`,
      );
    }
  });

  it("mount-target-reserved: over the task folder, scratch or a system path", () => {
    const cases: [string, string][] = [
      ["/task/data", "/task"],
      ["/etc/x", "/etc"],
      ["/scratch", "/scratch"],
      ["/", "/"],
      ["/usr/local/d", "/usr"],
    ];
    for (const [target, reserved] of cases) {
      const e = refusal(() => resolveWith(samIn({ mounts: [mount(dataRoot, target)] })));
      expect(e.message).toBe(
        `policy refused [mount-target-reserved] ${target}: mount '${dataRoot}' -> '${target}' (line 7): the container path overlaps ${reserved}, which the sandbox itself uses. Pick a path of its own, like /data/<name> or /inputs/<name>.`,
      );
    }
  });

  it("mount-overlap: two mounts where one container path holds the other", () => {
    const sam = samIn({
      mounts: [mount(dataRoot, "/data"), mount(join(dataRoot, "set1"), "/data/set1", "ro", 8)],
    });
    const e = refusal(() => resolveWith(sam));
    expect(e.message).toBe(
      `policy refused [mount-overlap] /data/set1: mount '${dataRoot}/set1' -> '/data/set1' (line 8): the container path overlaps /data of the declared mount (line 7). Give each mount its own container path, none inside another.`,
    );
  });

  it("mount-missing: a host path that does not exist, relative to the SAM folder", () => {
    const sam = samIn({ mounts: [mount("inputs", "/inputs")] });
    const dir = join(sam.file, "..");
    const e = refusal(() => resolveWith(sam));
    expect(e.message).toBe(
      `policy refused [mount-missing] ${dir}/inputs: mount 'inputs' -> '/inputs' (line 7): the host path does not exist (or a link on the way is broken). Create it or fix the path (relative paths are resolved against the SAM's folder).`,
    );
  });

  it("mount-denied: system folders, /, credential folders, engine sockets, the runner's memory", () => {
    const denied = (host: string) =>
      refusal(() =>
        resolveWith(samIn({ mounts: [mount(host, "/data")] }), site({ allowedMountRoots: ["/"] })),
      );
    const msg = (path: string, host: string, what: string) =>
      `policy refused [mount-denied] ${path}: mount '${host}' -> '/data' (line 7): the resolved path ${what}, which is never mounted. Mount a folder that holds only the data the task needs.`;
    expect(denied("/etc").message).toBe(msg("/etc", "/etc", "is the system folder /etc"));
    expect(denied("/").message).toBe(msg("/", "/", "is the host's root folder"));
    expect(denied("/proc/self").message).toMatch(
      /^policy refused \[mount-denied\] \/proc\/\d+: .*lies inside the system folder \/proc \(\/proc\)/,
    );
    expect(denied("/root").message).toBe(msg("/root", "/root", "is the system folder /root"));
    expect(denied(join(home, "memory")).message).toBe(
      msg(`${home}/memory`, `${home}/memory`, "is the runner's memory folder (memory/)"),
    );
    expect(denied(home).message).toBe(
      msg(home, home, `contains the runner's state folder (runs/) (${home}/runs)`),
    );
    const fakeHome = mkdtempSync(join(dataRoot, "user-"));
    mkdirSync(join(fakeHome, ".ssh"));
    expect(denied(join(fakeHome, ".ssh")).message).toBe(
      msg(`${fakeHome}/.ssh`, `${fakeHome}/.ssh`, "is or lies inside a key/credential folder (.ssh)"),
    );
    writeFileSync(join(dataRoot, "docker.sock"), "");
    expect(denied(join(dataRoot, "docker.sock")).message).toBe(
      msg(
        `${dataRoot}/docker.sock`,
        `${dataRoot}/docker.sock`,
        "is or lies inside a container-engine socket",
      ),
    );
  });

  it("mount-denied: evals/ (other trials' records and copies), evolve/ and .scifi/; a trial's own copy may run", () => {
    const trial = join(home, "evals", "e1", "trials", "t.default.m.r0", "task");
    const other = join(home, "evals", "e1", "trials", "t.default.m.r1");
    for (const d of [trial, other, join(home, "evolve"), join(home, ".scifi", "task-locks")])
      mkdirSync(d, { recursive: true });
    const denied = (host: string) =>
      refusal(() =>
        resolveWith(samIn({ mounts: [mount(host, "/data")] }), site({ allowedMountRoots: ["/"] })),
      ).message;
    expect(denied(other)).toMatch(/lies inside the runner's eval folder \(evals\/: every trial's records/);
    expect(denied(join(home, "evals"))).toMatch(/is the runner's eval folder/);
    expect(denied(join(home, "evolve"))).toMatch(/is the runner's evolve proposals and decisions/);
    expect(denied(join(home, ".scifi", "task-locks"))).toMatch(/lies inside the runner's internal folder/);
    // A trial runs on its own copy under evals/: its task folder is granted.
    expect(resolveWith(samIn({}, trial)).taskDir).toBe(trial);
    // ...but a task folder that is or holds evals/ is not.
    const holding = refusal(() => resolveWith(samIn({}, join(home, "evals"))));
    expect(holding.rule).toBe("task-folder-denied");
  });

  it("mount-denied: daemon/ and check-task/ (other tasks' records, logs and copies); a task's own work folder may run", () => {
    const work = join(home, "daemon", "work", "t.md");
    const records = join(home, "daemon", "tasks");
    const audit = join(home, "check-task", "work", "0123456789abcdef", "untouched");
    for (const d of [work, records, audit]) mkdirSync(d, { recursive: true });
    const denied = (host: string) =>
      refusal(() =>
        resolveWith(samIn({ mounts: [mount(host, "/data")] }), site({ allowedMountRoots: ["/"] })),
      ).message;
    expect(denied(records)).toMatch(/lies inside the daemon's folder \(daemon\/: every task's record/);
    expect(denied(join(home, "daemon"))).toMatch(/is the daemon's folder/);
    expect(denied(join(home, "check-task"))).toMatch(/is check-task's folder/);
    expect(resolveWith(samIn({}, work)).taskDir).toBe(work);
    expect(resolveWith(samIn({}, audit)).taskDir).toBe(audit);
    expect(refusal(() => resolveWith(samIn({}, join(home, "daemon")))).rule).toBe("task-folder-denied");
  });

  it("mount-denied: a symlink inside an allowed root that points at a denied path is resolved first", () => {
    const link = join(dataRoot, `to-memory-${Date.now()}`);
    symlinkSync(join(home, "memory"), link);
    const e = refusal(() =>
      resolveWith(samIn({ mounts: [mount(link, "/data")] }), site({ allowedMountRoots: [dataRoot, home] })),
    );
    expect(e.rule).toBe("mount-denied");
    expect(e.path).toBe(`${home}/memory`);
    expect(e.message).toBe(
      `policy refused [mount-denied] ${home}/memory: mount '${link}' -> '/data' (line 7): the resolved path is the runner's memory folder (memory/), which is never mounted. Mount a folder that holds only the data the task needs.`,
    );
    const etcLink = join(dataRoot, `to-etc-${Date.now()}`);
    symlinkSync("/etc", etcLink);
    expect(refusal(() => resolveWith(samIn({ mounts: [mount(etcLink, "/data")] }))).message).toContain(
      "[mount-denied] /etc: ",
    );
  });

  it("mount-outside-roots: none configured, or not under the configured ones", () => {
    const other = mkdtempSync(join(base, "other-"));
    const none = refusal(() =>
      resolveWith(samIn({ mounts: [mount(other, "/data")] }), site({ allowedMountRoots: [] })),
    );
    expect(none.message).toBe(
      `policy refused [mount-outside-roots] ${other}: mount '${other}' -> '/data' (line 7): the resolved path is not under an allowed mount root (none are configured (the built-in site policy allows no declared mounts)). Add a root that holds it to allowedMountRoots in the site policy, or move the data under an allowed root.`,
    );
    const some = refusal(() => resolveWith(samIn({ mounts: [mount(other, "/data")] })));
    expect(some.message).toBe(
      `policy refused [mount-outside-roots] ${other}: mount '${other}' -> '/data' (line 7): the resolved path is not under an allowed mount root (allowed: ${dataRoot}). Add a root that holds it to allowedMountRoots in the site policy, or move the data under an allowed root.`,
    );
  });

  it("mount-rw-not-allowed: rw when the site allows only ro", () => {
    const e = refusal(() => resolveWith(samIn({ mounts: [mount(dataRoot, "/data", "rw")] })));
    expect(e.message).toBe(
      `policy refused [mount-rw-not-allowed] ${dataRoot}: mount '${dataRoot}' -> '/data' (line 7) asks for read-write and the site policy allows only read-only declared mounts (allowReadWriteMounts: false). Use mode ro and write results into the task folder, or ask the site administrator.`,
    );
  });

  it("mount-inside-writable: a declared mount in the task folder (read-only or not), or inside a read-write mount", () => {
    const dir = mkdtempSync(join(dataRoot, "task-in-data-"));
    for (const mode of ["ro", "rw"] as const) {
      const sam = samIn({ mounts: [mount(".", "/work", mode)] }, dir);
      const e = refusal(() => resolveWith(sam, site({ allowReadWriteMounts: true })));
      expect(e.message).toBe(
        `policy refused [mount-inside-writable] ${dir}: mount '.' -> '/work' (line 7): the resolved path is the task folder, which the sandbox can write, so the agent could swap it for a link to any host path. Keep the data in the task folder (it is mounted at /task already), or mount a folder outside it.`,
      );
    }
    mkdirSync(join(dir, "data"));
    const inside = samIn({ mounts: [mount("data", "/data")] }, dir);
    expect(refusal(() => resolveWith(inside)).message).toContain(
      "[mount-inside-writable] " +
        join(dir, "data") +
        ": mount 'data' -> '/data' (line 7): the resolved path overlaps the task folder",
    );
    const outer = mkdtempSync(join(dataRoot, "rw-"));
    mkdirSync(join(outer, "inner"));
    const nested = samIn({ mounts: [mount(outer, "/out", "rw"), mount(join(outer, "inner"), "/in")] });
    expect(refusal(() => resolveWith(nested, site({ allowReadWriteMounts: true }))).message).toContain(
      `overlaps the read-write mount ${outer}`,
    );
  });

  it("network-not-allowed", () => {
    const e = refusal(() => resolveWith(samIn({ network: true }), site({ allowNetwork: false })));
    expect(e.message).toBe(
      "policy refused [network-not-allowed] network: the SAM asks for network access and the site policy does not allow it (allowNetwork: false). Remove `network: true` from the SAM, or ask the site administrator to allow network.",
    );
  });

  it("gpu-over-limit", () => {
    const e = refusal(() => resolveWith(samIn({ gpu: 2 }), site({ maxGpus: 1 })));
    expect(e.message).toBe(
      "policy refused [gpu-over-limit] gpu: the SAM asks for 2 GPU(s) and the site allows at most 1. Ask for at most 1 (maxGpus in the site policy).",
    );
  });

  it("cpus-over-limit: by the site, and by the machine", () => {
    expect(refusal(() => resolveWith(samIn({ cpus: 6 }))).message).toBe(
      "policy refused [cpus-over-limit] cpus: the SAM asks for 6 CPUs and at most 4 are allowed (site maxCpus 4, this machine has 8). Ask for at most 4 CPUs.",
    );
    const e = refusal(() => resolveSpec(samIn({ cpus: 3 }), site(), { ...opts, home, hostCpus: 2 }));
    expect(e.message).toBe(
      "policy refused [cpus-over-limit] cpus: the SAM asks for 3 CPUs and at most 2 are allowed (site maxCpus 4, this machine has 2). Ask for at most 2 CPUs.",
    );
  });

  it("memory-, walltime- and scratch-over-limit", () => {
    expect(refusal(() => resolveWith(samIn({ memoryBytes: 32 * GiB }))).message).toBe(
      "policy refused [memory-over-limit] memory: the SAM asks for memory 32 GiB and the site allows at most 16 GiB. Ask for at most 16 GiB (maxMemory in the site policy).",
    );
    expect(refusal(() => resolveWith(samIn({ walltimeSec: 48 * 3600 }))).message).toBe(
      "policy refused [walltime-over-limit] walltime: the SAM asks for walltime 48h and the site allows at most 24h. Ask for at most 24h (maxWalltime in the site policy).",
    );
    expect(refusal(() => resolveWith(samIn({ scratchBytes: 100 * GiB }))).message).toBe(
      "policy refused [scratch-over-limit] scratch: the SAM asks for scratch 100 GiB and the site allows at most 20 GiB. Ask for at most 20 GiB (maxScratch in the site policy).",
    );
  });
});
