// Conformance, part of test/sandbox/conformance.ts (its own file so that suites added there in
// parallel do not collide): who owns a sandbox and when prune may stop it, what the sandbox can see
// of the host that started it, and whether it can give itself a user namespace. Runs on every backend.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { homedir, userInfo } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../runner/policy/spec.ts";
import type { Sandbox, SandboxBackend } from "../../runner/sandbox/types.ts";

export interface OwnersContext {
  /** The registry name the backend is started by in a child runner (`docker`, `apptainer`). */
  backendName: string;
  backend: () => SandboxBackend;
  workspace: () => string;
  newSpec: (extra?: Partial<SandboxSpec>) => SandboxSpec;
  start: (extra?: Partial<SandboxSpec>) => Promise<Sandbox>;
  /** Whether the sandbox of `runId` still exists in the engine. */
  exists?: (runId: string) => Promise<boolean>;
}

const CHILD = join(import.meta.dirname, "owner-child.ts");

export function ownersAndHostView(ctx: OwnersContext): void {
  describe("owners and prune, the host as the sandbox sees it, nested namespaces", () => {
    const children: ChildProcess[] = [];
    afterAll(() => {
      for (const child of children) child.kill("SIGKILL");
    });

    /** A runner in another process that starts the sandbox of `spec` and idles. */
    async function otherRunner(spec: SandboxSpec): Promise<ChildProcess> {
      const child = spawn(process.execPath, [CHILD, ctx.backendName, JSON.stringify(spec)], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.push(child);
      await new Promise<void>((done, fail) => {
        child.stdout?.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes(`started ${spec.runId}`)) done();
        });
        child.once("exit", (code) =>
          fail(new Error(`the child runner exited (${code}) before its sandbox started`)),
        );
      });
      return child;
    }

    async function killHard(child: ChildProcess): Promise<void> {
      const gone = new Promise<void>((done) => child.once("exit", () => done()));
      child.kill("SIGKILL");
      await gone;
    }

    it("prune keeps a live owner's sandbox and another home's, and stops this home's once its owner is dead", async () => {
      const home = mkdtempSync(join(ctx.workspace(), "home-"));
      const otherHome = mkdtempSync(join(ctx.workspace(), "other-home-"));
      const mine = ctx.newSpec({ home });
      const theirs = ctx.newSpec({ home: otherHome });
      const mineRunner = await otherRunner(mine);
      const theirRunner = await otherRunner(theirs);
      const backend = ctx.backend();
      // Both owners alive: nothing of either is touched, whoever prunes.
      expect((await backend.prune({ home })).join()).not.toContain(mine.runId);
      expect((await backend.prune({ home: otherHome })).join()).not.toContain(theirs.runId);
      await killHard(mineRunner);
      await killHard(theirRunner);
      // Both owners dead: this home's prune stops only this home's sandbox.
      const removed = await backend.prune({ home });
      expect(removed.join()).toContain(mine.runId);
      expect(removed.join()).not.toContain(theirs.runId);
      if (ctx.exists) {
        expect(await ctx.exists(mine.runId)).toBe(false);
        expect(await ctx.exists(theirs.runId)).toBe(true);
      }
      // Its own home's prune then takes the other one (and leaves nothing behind).
      expect((await backend.prune({ home: otherHome })).join()).toContain(theirs.runId);
      if (ctx.exists) expect(await ctx.exists(theirs.runId)).toBe(false);
    }, 180_000);

    it("shows no engine configuration and no host folder, user or home in any environment inside", async () => {
      const sb = await ctx.start();
      const r = await sb.exec(
        [
          "env",
          "echo ---self; tr '\\0' '\\n' < /proc/self/environ",
          "echo ---init; tr '\\0' '\\n' < /proc/1/environ 2>&1",
          // every process the sandbox can list, the init's threads included
          "for f in /proc/[0-9]*/environ /proc/1/task/*/environ; do echo \"---$f\"; tr '\\0' '\\n' < \"$f\" 2>&1; done",
          "true",
        ].join("; "),
      );
      expect(r.exitCode).toBe(0);
      const seen = r.stdout;
      expect(seen).toContain("---self");
      expect(seen).not.toMatch(/ENGINE_CONFIG/);
      expect(seen).not.toMatch(/^(APPTAINER|SINGULARITY)_[A-Z]+=/m);
      const user = userInfo().username;
      for (const hostPath of [process.cwd(), homedir(), sb.spec.taskDir]) {
        expect(seen, `host path ${hostPath}`).not.toContain(`=${hostPath}`);
        expect(seen, `host path ${hostPath}`).not.toContain(`"${hostPath}`);
      }
      expect(seen).not.toMatch(new RegExp(`^(USER|LOGNAME)=${user}$`, "m"));
      expect(seen).toMatch(/^HOME=\/tmp$/m);
    });

    // Every pid and thread id the sandbox could guess, not only what /proc lists.
    it("no process or thread it can name shows the engine's configuration", async () => {
      const sb = await ctx.start();
      const r = await sb.exec(
        "for n in $(seq 1 300); do [ -r /proc/$n/environ ] && tr '\\0' '\\n' < /proc/$n/environ; done; true",
        { timeoutMs: 60_000 },
      );
      expect(r.stdout).not.toMatch(/ENGINE_CONFIG/);
    });

    it("cannot give itself a user namespace or mount anything (unshare -r, unshare -rm)", async () => {
      const sb = await ctx.start();
      // Positive control: the tools are there and work when no new namespace is asked for.
      expect((await sb.exec("unshare --help >/dev/null && echo present")).stdout).toBe("present\n");
      const userns = await sb.exec("unshare -r id -u");
      expect(userns.exitCode, userns.stderr).not.toBe(0);
      expect(userns.stdout).not.toBe("0\n");
      const mount = await sb.exec("unshare -rm sh -c 'mount -t tmpfs none /tmp && echo mounted'");
      expect(mount.exitCode).not.toBe(0);
      expect(mount.stdout).not.toContain("mounted");
      const plain = await sb.exec("mount -t tmpfs none /tmp 2>&1 || echo refused");
      expect(plain.stdout).toContain("refused");
    });

    it("cannot make a user namespace with a raw clone3 either (seccomp cannot read its flags)", async () => {
      const sb = await ctx.start();
      // clone3(CLONE_NEWUSER) through perl's syscall(): 435 on x86_64 and arm64; struct clone_args
      // is flags, pidfd, child_tid, parent_tid, exit_signal (SIGCHLD), stack, stack_size, tls.
      const script = [
        'my $args = pack("Q8", 0x10000000, 0, 0, 0, 17, 0, 0, 0);',
        "my $r = syscall(435, $args, 64);",
        "exit 0 if $r == 0;",
        'print $r > 0 ? "created\n" : "refused: $!\n";',
        "waitpid($r, 0) if $r > 0;",
      ].join(" ");
      // Positive control: the probe itself runs (perl-base is in every Debian-based image).
      expect((await sb.exec(["perl", "-e", "print 42"])).stdout).toBe("42");
      const r = await sb.exec(["perl", "-e", script]);
      expect(r.stdout).toMatch(/^refused: /);
    });
  });
}
