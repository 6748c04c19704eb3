// The pid lock's takeover of a stale lock (runner/pid-lock.ts): a side file left by a takeover that
// died is reported, not removed on a guess; a lock file just created and not yet written is waited
// for before it is judged torn; a dead owner's lock is taken over and names the new owner.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { acquirePidLock, LockHeld, type PidLockOwner } from "../runner/pid-lock.ts";

const refuse = (owner: PidLockOwner) => new LockHeld(`held by ${owner.pid}`, owner);
const deadPid = () => Number(spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" }).stdout.trim());

function lockFile(): string {
  return join(mkdtempSync(join(tmpdir(), "pid-lock-")), "x.lock");
}

describe("pid lock takeover", () => {
  it("takes over a dead owner's lock, and the file then names this process", () => {
    const file = lockFile();
    writeFileSync(file, JSON.stringify({ pid: deadPid(), host: hostname(), startedAt: "then" }));
    const { release, stale } = acquirePidLock(file, {}, refuse);
    expect(stale?.startedAt).toBe("then");
    expect(JSON.parse(readFileSync(file, "utf8")).pid).toBe(process.pid);
    expect(existsSync(`${file}.takeover`)).toBe(false);
    release();
    expect(existsSync(file)).toBe(false);
  });

  it("a takeover side file left by a process that died is reported, naming the file to delete", () => {
    const file = lockFile();
    writeFileSync(file, JSON.stringify({ pid: deadPid(), host: hostname(), startedAt: "then" }));
    writeFileSync(`${file}.takeover`, "");
    expect(() => acquirePidLock(file, {}, refuse)).toThrow(`delete ${file}.takeover and try again`);
    // Nothing was taken or removed on a guess.
    expect(JSON.parse(readFileSync(file, "utf8")).startedAt).toBe("then");
  });

  it("an empty lock file a moment old is waited for (its creator may be between create and write), then judged torn", () => {
    const file = lockFile();
    writeFileSync(file, "");
    const t0 = Date.now();
    // Its creator never writes here, so after the wait it is judged torn (stale) and taken over.
    const { release } = acquirePidLock(file, {}, refuse);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect(JSON.parse(readFileSync(file, "utf8")).pid).toBe(process.pid);
    release();
  });
});
