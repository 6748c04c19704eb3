// The lending attacks of issue 26 (points 4 and 5) through a real Docker sandbox, as a root-run
// scifi: the agent inside is the sandbox user (65534) and does what it would. A pre-existing hard
// link to a root-owned 0600 file outside the folder; a folder named $'\xff' holding a setuid shell
// and 20 MiB against an 8 MiB quota; a 300-level tree; mode and ACL residue (the ACL set with
// python's setxattr, no setfacl needed in the image). Apptainer is not here: a root-run scifi refuses
// it (the sandbox would be root), so nothing is lent there.
import { spawnSync } from "node:child_process";
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
import { beforeAll, describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../runner/policy/spec.ts";
import { createDockerBackend } from "../../runner/sandbox/docker.ts";
import { QuotaExceeded, type Sandbox } from "../../runner/sandbox/types.ts";
import { hasEngine } from "../helpers/engines.ts";
import { taskFolderSpec } from "../helpers/spec.ts";
import { ensureImage, IMAGE } from "../run/harness.ts";

const isRoot = process.getuid?.() === 0;
const haveAcl = spawnSync("getfacl", ["--version"]).status === 0;
const MiB = 1024 ** 2;

function folder(): { base: string; task: string } {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "scifi-lend-docker-")));
  chmodSync(base, 0o755);
  const task = join(base, "task");
  mkdirSync(task);
  writeFileSync(join(task, "task.md"), "x\n");
  return { base, task };
}

async function start(task: string, overrides: Partial<SandboxSpec> = {}): Promise<Sandbox> {
  const spec = taskFolderSpec(
    { runId: `lend-${process.pid}-${Date.now()}`, image: IMAGE, taskDir: task },
    { labels: { "scifi.test": "lending" }, ...overrides },
  );
  return createDockerBackend().start(spec);
}

function extendedAcl(path: string): string {
  const r = spawnSync("getfacl", ["-P", "-n", "--skip-base", "--omit-header", "--", path], {
    encoding: "utf8",
  });
  return r.stdout.trim();
}

/** Python that gives `path` the ACL user:65534:rwx (the kernel's xattr format, version 2). */
function pythonAcl(path: string): string {
  return `import os,struct; e=[(1,6,0xffffffff),(2,7,65534),(4,4,0xffffffff),(16,7,0xffffffff),(32,4,0xffffffff)]; os.setxattr('${path}','system.posix_acl_access',struct.pack('<I',2)+b''.join(struct.pack('<HHI',*x) for x in e))`;
}

describe.skipIf(!hasEngine("docker") || !isRoot)(
  "lending the task folder to a Docker sandbox (as root)",
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("a hard link to a root-owned 0600 file outside stays root's: the agent can neither read, chmod nor write it", async () => {
      const { base, task } = folder();
      const secret = join(base, "shadow");
      writeFileSync(secret, "root's secret\n");
      chmodSync(secret, 0o600);
      linkSync(secret, join(task, "linked"));
      const sb = await start(task);
      try {
        expect(sb.notLent?.()).toEqual([{ path: "linked", why: expect.stringMatching(/hard links/) }]);
        const r = await sb.exec(
          "cat linked; chmod 0666 linked; echo owned >> linked; echo ok > mine && echo MINE-OK; true",
        );
        expect(r.stdout).toContain("MINE-OK"); // the control: its own folder it writes
        expect(r.stdout).not.toContain("secret");
      } finally {
        await sb.stop();
      }
      expect(statSync(secret)).toMatchObject({ uid: 0, gid: 0 });
      expect(statSync(secret).mode & 0o7777).toBe(0o600);
      expect(readFileSync(secret, "utf8")).toBe("root's secret\n");
      expect(statSync(join(task, "mine")).uid).toBe(0);
    });

    it("a folder named \\xff: its setuid shell is cleared, its entries given back, its 20 MiB count against an 8 MiB quota", async () => {
      const { task } = folder();
      const sb = await start(task, { taskFolderQuota: { maxAddBytes: 8 * MiB } });
      const ff = Buffer.concat([Buffer.from(`${task}/`), Buffer.from([0xff])]);
      try {
        const made = await sb.exec(
          `d="$(printf '\\377')"; mkdir "$d" && cp /bin/sh "$d/sh" && chmod 4755 "$d/sh" && echo MADE`,
        );
        expect(made.stdout).toContain("MADE");
        expect(lstatSync(Buffer.concat([ff, Buffer.from("/sh")])).mode & 0o4000).toBe(0o4000); // the control
        await expect(
          sb.exec(`dd if=/dev/urandom of="$(printf '\\377')/big" bs=1M count=20 2>&1; sync`),
        ).rejects.toThrow(QuotaExceeded);
      } finally {
        await sb.stop();
      }
      for (const name of ["", "/sh", "/big"]) {
        const stat = lstatSync(Buffer.concat([ff, Buffer.from(name)]));
        expect(stat.uid, name).toBe(0);
        expect(stat.mode & 0o6000, name).toBe(0);
      }
    });

    it("a 300-level tree the agent made is given back to its bottom, its setuid bit cleared", async () => {
      const { task } = folder();
      const sb = await start(task);
      try {
        const r = await sb.exec(
          "i=0; while [ $i -lt 300 ]; do mkdir l && cd l || exit 1; i=$((i+1)); done; cp /bin/sh sh && chmod 4755 sh && echo DEEP",
        );
        expect(r.stdout, r.stderr).toContain("DEEP");
      } finally {
        await sb.stop();
      }
      const bottom = join(task, ...Array(300).fill("l"), "sh");
      expect(lstatSync(bottom).uid).toBe(0);
      expect(lstatSync(bottom).mode & 0o6000).toBe(0);
      expect(lstatSync(join(task, "l")).uid).toBe(0);
    });

    it.runIf(haveAcl)(
      "modes and ACLs the agent set do not stay: 0777 and user:65534:rwx are gone after the give back",
      async () => {
        const { task } = folder();
        writeFileSync(join(task, "data.txt"), "x\n");
        chmodSync(join(task, "data.txt"), 0o644);
        const sb = await start(task);
        try {
          const r = await sb.exec([
            "sh",
            "-c",
            `chmod 0777 data.txt . && echo n > new.txt && python3 -c "${pythonAcl("data.txt")}" && python3 -c "${pythonAcl("new.txt")}" && echo SET`,
          ]);
          expect(r.stdout, r.stderr).toContain("SET");
          expect(extendedAcl(join(task, "data.txt"))).toContain("user:65534:rwx"); // the control
        } finally {
          await sb.stop();
        }
        for (const f of ["data.txt", "new.txt", "."]) expect(extendedAcl(join(task, f)), f).toBe("");
        // Group and other as at the start (r--); the owner's bits are what the agent's ACL left (rw-).
        expect(statSync(join(task, "data.txt")).mode & 0o7777).toBe(0o644);
        expect(statSync(task).mode & 0o022).toBe(0);
        expect(statSync(join(task, "new.txt")).mode & 0o022).toBe(0);
      },
    );
  },
);
