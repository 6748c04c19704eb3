// A lend whose process was killed is given back before the folder is lent again (issue 38.3), as
// root: a child lends a task folder (owned by uid 4321, one file by root) through lendRecorded and
// is SIGKILLed before its give back; the folder is the sandbox user's. The next lendRecorded of
// that folder first gives it back by the dead lend's record, so what it records (and gives back at
// its end) are the owners from before the first lend, never the sandbox user. A record of a live
// process is left alone.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { returnTaskFolder } from "../../runner/policy/lending.ts";
import { forgetLend, giveBackAbandoned, lendRecorded } from "../../runner/policy/lent-record.ts";
import { REPO } from "../run/harness.ts";

const SANDBOX = { uid: 65534, gid: 65534 };
const OWNER = { uid: 4321, gid: 4322 };

function ownersOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    const stat = lstatSync(join(dir, rel));
    out[rel || "."] = `${stat.uid}:${stat.gid}:${(stat.mode & 0o7777).toString(8)}`;
    if (stat.isDirectory()) for (const name of readdirSync(join(dir, rel))) walk(join(rel, name));
  };
  walk("");
  return out;
}

/** A child that lends the folder through lendRecorded and then waits to be killed. */
async function lendInChild(task: string, runtime: string) {
  const script = `import { lendRecorded } from ${JSON.stringify(join(REPO, "runner/policy/lent-record.ts"))};
await lendRecorded(${JSON.stringify(task)}, ${JSON.stringify(SANDBOX)}); process.stdout.write("lent\\n"); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...process.env, SCIFI_RUNTIME_DIR: runtime },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await once(child.stdout, "data");
  return child;
}

describe.runIf(process.getuid?.() === 0)("a lend whose process died (as root)", () => {
  it("is given back before the next lend: the next run records and returns the first owners", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-lent-record-"));
    const runtime = join(root, "runtime");
    mkdirSync(runtime, { mode: 0o700 });
    const task = join(root, "task");
    mkdirSync(join(task, "data"), { recursive: true });
    writeFileSync(join(task, "task.md"), "# T\n");
    writeFileSync(join(task, "data", "in.csv"), "1\n");
    writeFileSync(join(task, "root-made.txt"), "x\n");
    for (const rel of ["", "task.md", "data", "data/in.csv"])
      chownSync(join(task, rel), OWNER.uid, OWNER.gid);
    const before = ownersOf(task);

    const child = await lendInChild(task, runtime);
    expect(lstatSync(join(task, "data", "in.csv")).uid).toBe(SANDBOX.uid);
    // A live lend's record is not touched.
    process.env.SCIFI_RUNTIME_DIR = runtime;
    try {
      expect(await giveBackAbandoned(task)).toBe(0);
      expect(lstatSync(task).uid).toBe(SANDBOX.uid);
      child.kill("SIGKILL");
      await once(child, "exit");

      const record = await lendRecorded(task, SANDBOX);
      expect(record.rootOwner).toEqual(OWNER);
      expect(
        record.entries.get(
          `${lstatSync(join(task, "root-made.txt")).dev}:${lstatSync(join(task, "root-made.txt")).ino}`,
        ),
      ).toMatchObject({ uid: 0 });
      await returnTaskFolder(record);
      forgetLend(task);
      expect(ownersOf(task)).toEqual(before);
      expect(readdirSync(join(runtime, "lent"))).toEqual([]);
    } finally {
      delete process.env.SCIFI_RUNTIME_DIR;
    }
  });
});
