// The task maker with a SCRIPTED model through the real gateway and audit tape: the repair loop
// fixes an invalid first draft using the real validator's diagnostics, the written file validates,
// and grants the request did not name are withheld (as comments) in code.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runMakeTask } from "../../runner/helpers/make-task/command.ts";
import { assertOnlyNamedGrants, withholdGrants } from "../../runner/helpers/make-task/grants.ts";
import { parseSamString, parseSamSync } from "../../runner/sam/parse.ts";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "helpers", "make-task");

function home() {
  const dir = mkdtempSync(join(tmpdir(), "scifi-make-task-"));
  mkdirSync(join(dir, "tasks"));
  return dir;
}

async function run(
  request: string,
  script: string,
  extra: { output?: string; toInbox?: boolean; cwd?: string } = {},
) {
  const h = home();
  const out: string[] = [];
  const err: string[] = [];
  const code = await runMakeTask(request, {
    model: `scripted:${join(FIXTURES, script)}`,
    env: { ...process.env, SCIFI_HOME: h },
    cwd: extra.cwd ?? h,
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    ...extra,
  });
  return { code, home: h, out: out.join(""), err: err.join("") };
}

const REQUEST =
  "Fit a Gaussian to the energy column of data/energies.csv and write mu and sigma to out/fit.json";

describe("scifi make-task (scripted model)", () => {
  it("repairs an invalid first draft and writes a SAM that validates, granting nothing unasked", async () => {
    const r = await run(REQUEST, "repair.yaml");
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    // A draft goes to the current folder, never into the daemon's inbox.
    const file = join(r.home, "gaussian-fit.md");
    expect(r.out).toContain(`wrote ${file} (valid after 2 tries`);
    expect(readdirSync(join(r.home, "tasks"))).toEqual([]);
    const parsed = parseSamSync(file);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const m = parsed.sam.metadata;
    expect(m).toMatchObject({
      network: false,
      gpu: 0,
      mounts: [],
      skills: ["python-data"],
      walltimeSec: 1800,
    });
    expect(m.jobs).toBeUndefined();
    expect(parsed.sam.root.items[0]?.checks).toHaveLength(1);
    // Withheld grants are suggestions in comments, and reported.
    const text = readFileSync(file, "utf8");
    expect(text).toContain("# network: true");
    expect(text).toContain('# mounts: ["/data/shared/calib:/calib:ro"]');
    expect(r.out).toContain("not granted");
    // The audit tape of the helper's run records both calls, role make_task.
    const runs = readdirSync(join(r.home, "runs"));
    expect(runs).toHaveLength(1);
    const tape = readFileSync(join(r.home, "runs", runs[0] ?? "", "audit.jsonl"), "utf8")
      .trim()
      .split("\n");
    const calls = tape.map(
      (l) => JSON.parse(l) as { type?: string; role?: string; request?: { role?: string } },
    );
    expect(calls.filter((c) => JSON.stringify(c).includes('"make_task"'))).toHaveLength(2);
  });

  it("stops after three tries, writes nothing and exits 2", async () => {
    const r = await run(REQUEST, "never-valid.yaml");
    expect(r.code).toBe(2);
    expect(r.err).toContain("no valid SAM after 3 tries");
    expect(readdirSync(join(r.home, "tasks"))).toEqual([]);
  });

  it("refuses -o inside the inbox before calling any model; --to-inbox writes there and says so", async () => {
    const refused = await run(REQUEST, "repair.yaml", { output: "tasks/fit.md" });
    expect(refused.code).toBe(2);
    expect(refused.err).toContain("is inside the daemon's inbox");
    expect(refused.err).toContain("--to-inbox");
    expect(readdirSync(join(refused.home, "tasks"))).toEqual([]);
    expect(readdirSync(refused.home).includes("runs")).toBe(false);
    // The current folder inside the inbox is the inbox too.
    const h = home();
    const inside = await runMakeTask(REQUEST, {
      model: "scripted:/nonexistent.yaml",
      env: { ...process.env, SCIFI_HOME: h },
      cwd: join(h, "tasks"),
      err: () => {},
    });
    expect(inside).toBe(2);
    // A link to the inbox is the inbox (links resolved).
    symlinkSync(join(h, "tasks"), join(h, "drafts"));
    const linked = await runMakeTask(REQUEST, {
      model: "scripted:/nonexistent.yaml",
      env: { ...process.env, SCIFI_HOME: h },
      cwd: h,
      output: "drafts/new/fit.md",
      err: () => {},
    });
    expect(linked).toBe(2);
    expect(readdirSync(join(h, "tasks"))).toEqual([]);
    const put = await run(REQUEST, "repair.yaml", { toInbox: true });
    expect(put.code).toBe(0);
    expect(put.out).toContain(`wrote ${join(put.home, "tasks", "gaussian-fit.md")}`);
    expect(put.out).toContain("a running daemon starts it");
  });

  it("refuses to overwrite an existing -o file before calling any model", async () => {
    const h = home();
    const target = join(h, "tasks", "mine.md");
    writeFileSync(target, "mine");
    const err: string[] = [];
    const code = await runMakeTask(REQUEST, {
      output: target,
      model: "scripted:/nonexistent.yaml",
      err: (t) => err.push(t),
    });
    expect(code).toBe(2);
    expect(err.join("")).toContain("already exists");
    expect(readFileSync(target, "utf8")).toBe("mine");
  });
});

describe("grant withholding (enforced in code)", () => {
  const draft = (front: string) =>
    `---\nname: t\n${front}\n---\n\n# T\n\n## To-do\nDo it.\n\n## Expectation\n- Done.\n`;

  it("keeps grants the request names and withholds the rest", () => {
    const all = draft(
      'network: true\ngpu: 1\njobs: slurm\nscratch: 10G\nmounts: ["/data/run1:/data:rw", "/etc/secret:/s:ro"]',
    );
    const none = withholdGrants(all, "analyse the data");
    expect(none.withheld.map((w) => w.key).sort()).toEqual([
      "gpu",
      "jobs",
      "mounts",
      "mounts",
      "network",
      "scratch",
    ]);
    const parsedNone = parseSamString(none.text, "/tmp/t.md");
    expect(parsedNone.ok && parsedNone.sam.metadata).toMatchObject({ network: false, gpu: 0, mounts: [] });

    const some = withholdGrants(all, "use the GPU and the internet on /data/run1 via SLURM");
    const parsed = parseSamString(some.text, "/tmp/t.md");
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.sam.metadata).toMatchObject({ network: true, gpu: 1, jobs: "slurm" });
    // Named path kept, but read-only: the request did not ask for write access.
    expect(parsed.sam.metadata.mounts.map((m) => [m.host, m.mode])).toEqual([["/data/run1", "ro"]]);
    expect(parsed.sam.metadata.scratchBytes).toBeUndefined();
    expect(() =>
      assertOnlyNamedGrants(parsed.sam.metadata, "use the GPU and the internet on /data/run1 via SLURM"),
    ).not.toThrow();
  });

  it("the final gate refuses metadata with unnamed grants", () => {
    const parsed = parseSamString(draft("network: true"), "/tmp/t.md");
    if (!parsed.ok) throw new Error("fixture should parse");
    expect(() => assertOnlyNamedGrants(parsed.sam.metadata, "analyse the data")).toThrow(
      "grants what the request did not name: network",
    );
  });
});
