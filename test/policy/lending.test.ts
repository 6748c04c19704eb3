// Lending a task folder to the sandbox user cannot leak (issue 26 point 5), as root: a hard link
// made before the run to a root-owned 0600 file outside the folder is never handed over; modes and
// ACLs the sandbox user set (0777, user:65534:rwx) do not stay after the give back; names that are
// not UTF-8 and a 300-level tree are lent and given back whole. The "sandbox" is a child process
// running as the sandbox uid, doing what an agent would.
import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { lendTaskFolder, returnTaskFolder } from "../../runner/policy/lending.ts";
import { clearPrivilegeBits } from "../../runner/policy/tree-walk.ts";

const SANDBOX = { uid: 65534, gid: 65534 };
const isRoot = process.getuid?.() === 0;
const haveAcl = spawnSync("setfacl", ["--version"]).status === 0;

let base: string;
let task: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "scifi-lending-")));
  chmodSync(base, 0o755);
  task = join(base, "task");
  mkdirSync(task);
});

/** Runs a shell command as the sandbox user in the task folder; its exit status. */
function asSandbox(command: string): number {
  return spawnSync("sh", ["-c", command], { cwd: task, uid: SANDBOX.uid, gid: SANDBOX.gid }).status ?? -1;
}

function extendedAcl(path: string): string {
  return execFileSync("getfacl", ["-P", "-n", "--skip-base", "--omit-header", "--", path], {
    encoding: "utf8",
  }).trim();
}

describe.runIf(isRoot)("lending the task folder (as root)", () => {
  it("a pre-existing hard link to a root-owned 0600 file outside is never chowned: the sandbox can neither read nor change it", async () => {
    const secret = join(base, "shadow");
    writeFileSync(secret, "root's secret\n");
    chmodSync(secret, 0o600);
    linkSync(secret, join(task, "linked"));
    writeFileSync(join(task, "work.txt"), "mine\n");
    const record = await lendTaskFolder(task, SANDBOX);
    expect(record.kept).toEqual([{ path: "linked", why: expect.stringMatching(/2 hard links/) }]);
    expect(statSync(secret)).toMatchObject({ uid: 0, gid: 0 });
    expect(statSync(join(task, "work.txt")).uid).toBe(SANDBOX.uid);
    // What the agent tried: make it 0666 and write to it, read it.
    expect(asSandbox("chmod 0666 linked")).not.toBe(0);
    expect(asSandbox("echo owned >> linked")).not.toBe(0);
    expect(asSandbox("cat linked")).not.toBe(0);
    expect(asSandbox("echo more >> work.txt")).toBe(0); // the control: its own files it can write
    await returnTaskFolder(record);
    expect(statSync(secret)).toMatchObject({ uid: 0, gid: 0 });
    expect(statSync(secret).mode & 0o7777).toBe(0o600);
    expect(readFileSync(secret, "utf8")).toBe("root's secret\n");
  });

  it("modes the sandbox user set give no group or other access the entry lacked at the start", async () => {
    writeFileSync(join(task, "private"), "x");
    chmodSync(join(task, "private"), 0o600);
    writeFileSync(join(task, "script.sh"), "#!/bin/sh\n");
    chmodSync(join(task, "script.sh"), 0o644);
    mkdirSync(join(task, "d"));
    chmodSync(join(task, "d"), 0o700);
    chmodSync(task, 0o755);
    const record = await lendTaskFolder(task, SANDBOX);
    expect(asSandbox("chmod 0777 private . d && chmod u+x script.sh && echo n > new && chmod 0777 new")).toBe(
      0,
    );
    await returnTaskFolder(record);
    expect(statSync(join(task, "private")).mode & 0o7777).toBe(0o700); // owner bits as left, no g/o
    expect(statSync(join(task, "script.sh")).mode & 0o7777).toBe(0o744); // chmod u+x survives
    expect(statSync(join(task, "d")).mode & 0o7777).toBe(0o700);
    expect(statSync(task).mode & 0o7777).toBe(0o755);
    expect(statSync(join(task, "new"))).toMatchObject({ uid: 0, gid: 0 });
    expect(statSync(join(task, "new")).mode & 0o7777).toBe(0o755); // made in the run: no g/o write
  });

  it.runIf(haveAcl)(
    "ACLs come back as they were: the sandbox user's entries removed, the start's put back",
    async () => {
      writeFileSync(join(task, "data"), "x");
      writeFileSync(join(task, "shared"), "x");
      execFileSync("setfacl", ["-m", "u:1234:r", join(task, "shared")]);
      mkdirSync(join(task, "team"));
      execFileSync("setfacl", ["-m", "u:1234:rx", join(task, "team")]);
      mkdirSync(join(task, "d"));
      const record = await lendTaskFolder(task, SANDBOX);
      const agent = [
        "setfacl -m u:65534:rwx data",
        "setfacl -b shared",
        "chmod 2775 team",
        "setfacl -d -m u:65534:rwx d",
        "setfacl -m u:65534:rwx .",
        "echo n > d/new",
        "setfacl -m u:65534:rwx d/new",
      ].join(" && ");
      // The image's tools stand in for the agent's: setfacl run as the sandbox user.
      expect(asSandbox(agent)).toBe(0);
      expect(extendedAcl(join(task, "data"))).toContain("user:65534:rwx");
      await returnTaskFolder(record);
      for (const f of ["data", "d", "d/new", "."]) expect(extendedAcl(join(task, f)), f).toBe("");
      expect(extendedAcl(join(task, "shared"))).toContain("user:1234:r--");
      expect(extendedAcl(join(task, "team"))).toContain("user:1234:r-x");
      // A folder's setgid bit survives its chown back; the give back clears it.
      expect(statSync(join(task, "team")).mode & 0o6000).toBe(0);
      expect(statSync(join(task, "d/new")).uid).toBe(0);
    },
  );

  it.runIf(haveAcl)(
    "600 entries the agent gave ACLs (group::rwx among them) all lose them, and group keeps no write",
    async () => {
      writeFileSync(join(task, "old"), "x");
      chmodSync(join(task, "old"), 0o644);
      const record = await lendTaskFolder(task, SANDBOX);
      const agent =
        "i=0; while [ $i -lt 600 ]; do echo > f$i; i=$((i+1)); done; setfacl -m u:65534:rwx,g::rwx,m::rwx old f*";
      expect(asSandbox(agent)).toBe(0);
      expect(extendedAcl(join(task, "f599"))).toContain("user:65534:rwx");
      await returnTaskFolder(record);
      for (const f of ["old", "f0", "f255", "f256", "f599"]) {
        expect(extendedAcl(join(task, f)), f).toBe("");
        expect(statSync(join(task, f)).mode & 0o022, f).toBe(0); // no group write left by group::rwx
      }
      expect(statSync(join(task, "old")).mode & 0o7777).toBe(0o644);
    },
  );

  it("a folder named \\xff is lent and given back, its setuid shell cleared", async () => {
    const ff = Buffer.concat([Buffer.from(`${task}/`), Buffer.from([0xff])]);
    mkdirSync(ff);
    writeFileSync(Buffer.concat([ff, Buffer.from("/old")]), "x");
    const record = await lendTaskFolder(task, SANDBOX);
    expect(lstatSync(ff).uid).toBe(SANDBOX.uid);
    expect(asSandbox("cd \"$(printf '\\377')\" && cp /bin/sh sh && chmod 4755 sh && echo y > new")).toBe(0);
    await returnTaskFolder(record);
    await clearPrivilegeBits(task);
    for (const name of ["", "/old", "/sh", "/new"]) {
      const stat = lstatSync(Buffer.concat([ff, Buffer.from(name)]));
      expect(stat.uid, name).toBe(0);
      expect(stat.mode & 0o6000, name).toBe(0);
    }
  });

  it("a 300-level tree is lent and given back to its bottom", async () => {
    let dir = task;
    for (let i = 0; i < 300; i++) {
      dir = join(dir, "l");
      mkdirSync(dir);
    }
    writeFileSync(join(dir, "f"), "x");
    const record = await lendTaskFolder(task, SANDBOX);
    expect(statSync(join(dir, "f")).uid).toBe(SANDBOX.uid);
    writeFileSync(join(dir, "g"), "y");
    execFileSync("chown", [`${SANDBOX.uid}:${SANDBOX.gid}`, join(dir, "g")]);
    await returnTaskFolder(record);
    for (const f of ["f", "g"]) expect(statSync(join(dir, f)).uid, f).toBe(0);
    expect(statSync(join(task, "l")).uid).toBe(0);
  });
});
