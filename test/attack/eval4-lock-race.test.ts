// Attack on "One process drives an eval" (attacker session eval4; from docs/eval.md "Durability and
// resume").
// Promise: "The driver holds `eval.lock` (the pid lock of runs and the daemon: exclusive create, a
// dead owner's lock is taken over). A second `scifi eval --resume` of a live eval is refused (exit 2)
// naming the process, before it touches a trial."
// What was done: an unlucky user with two terminals. The eval's driver was killed (eval.lock names a
// dead pid); two `scifi eval --resume <id>` start at the same moment. Both find the lock, read its
// dead owner, and take it over. The interleaving is made exact here (no timing luck): driver B reads
// the stale owner; then driver A takes the lock over (unlink, exclusive create: A now holds it, a live
// owner); then B goes on with what it read: the owner it saw is dead, so it unlinks the lock file (A's
// fresh lock) and creates its own.
// What happened: both acquirePidLock calls return a lock; the file names B; A believes it holds the
// lock and drives the eval too (two drivers, each removing the other's "unfinished" copies, running
// every pending trial twice: the eval2-resume-live breakage back, by a race). B should have been
// refused naming A (a live owner) — the takeover must not unlink a lock that is no longer the stale
// one it read (e.g. take over by rename of a fresh file onto the lock only while it still holds the
// same stale content/inode, or a lock on a side file taken with O_EXCL before the unlink).
// Fixed (runner/pid-lock.ts): takeovers are serialised by an exclusive side file and replace the
// lock only while it still holds the stale text that was read; B re-reads, finds A alive, is refused.
import { spawnSync } from "node:child_process";
import * as realFs from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";

const hook: { file?: string; onRead?: () => void } = {};

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const readFileSync = ((...args: Parameters<typeof fs.readFileSync>) => {
    const out = fs.readFileSync(...args);
    if (hook.file && args[0] === hook.file && hook.onRead) {
      const run = hook.onRead;
      hook.onRead = undefined; // once: the other driver's takeover, between B's read and B's unlink
      run();
    }
    return out;
  }) as typeof fs.readFileSync;
  return { ...fs, default: { ...fs, readFileSync }, readFileSync };
});

const { acquirePidLock, LockHeld, readPidLock } = await import("../../runner/pid-lock.ts");

describe("eval.lock: two resumes taking over a dead driver's lock at once", () => {
  it("only one of them drives the eval; the other is refused naming it", () => {
    const dir = realFs.mkdtempSync(join(tmpdir(), "eval4-lock-"));
    const lock = join(dir, "eval.lock");
    // A dead driver: a process that ran and exited.
    const dead = spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" }).stdout.trim();
    realFs.writeFileSync(
      lock,
      `${JSON.stringify({ pid: Number(dead), host: hostname(), startedAt: new Date(0).toISOString(), evalId: "x" })}\n`,
    );
    const refuse = (owner: { pid: number }) => new LockHeld(`held by ${owner.pid}`, owner as never);
    let a: { release: () => void } | undefined;
    hook.file = lock;
    hook.onRead = () => {
      // Driver A, at this moment: takes the dead owner's lock over, as it should.
      a = acquirePidLock(lock, { evalId: "x", driver: "A" }, refuse);
    };
    let b: { release: () => void } | undefined;
    let refused: unknown;
    try {
      b = acquirePidLock(lock, { evalId: "x", driver: "B" }, refuse);
    } catch (error) {
      refused = error;
    }
    hook.onRead = undefined;
    const holder = readPidLock<{ pid: number; host: string; startedAt: string; driver?: string }>(lock);
    expect(a, "driver A took the stale lock over").toBeDefined();
    // Broke: B also "took it over" (it unlinked A's fresh lock), and the file now names B.
    expect(b, "driver B must not hold the lock A holds").toBeUndefined();
    expect(refused).toBeInstanceOf(LockHeld);
    expect(holder?.driver).toBe("A");
  });
});
