// Attack on issue 38's one-run-per-task-folder lock (runner/task-folder-lock.ts), found by attacker
// a38; fixed: the host lock lives at fixed places keyed by uid (/tmp/scifi-<uid>, and
// /run/user/<uid>/scifi where that is the user's), never read from XDG_RUNTIME_DIR or TMPDIR. The host lock is meant to be host-wide ("in a per-user runtime folder outside
// every home, so two SCIFI_HOMEs ... meet the same lock"), but where that folder is comes from the
// process's environment: $XDG_RUNTIME_DIR/scifi when set, else <tmpdir>/scifi-<uid>. One user's two
// runs started from different environments (a login shell with XDG_RUNTIME_DIR=/run/user/UID, and a
// cron job, a `sudo -u`/`su` shell, or a service without it; or two TMPDIRs) look in different
// folders; with two SCIFI_HOMEs (whose locks are per home) both runs take every lock and work on the
// one task folder at once: what the lock exists to prevent. A fix could key the host lock by uid in
// one fixed place (e.g. /run/user/UID when it exists, else /tmp/scifi-UID, whatever the environment
// says), or take the lock in both candidate folders.
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lockTaskFolder, TaskFolderBusy } from "../../../runner/task-folder-lock.ts";

/** Runs `f` with the environment variables given (undefined: unset), then puts them back. */
function withEnv<T>(vars: Record<string, string | undefined>, f: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  set(vars);
  try {
    return f();
  } finally {
    set(saved);
  }
}

describe("a38: the task folder's host lock whatever the environment", () => {
  it("a second run of one folder from a shell without XDG_RUNTIME_DIR (another home) is refused", () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38-lock-"));
    const task = join(root, "task");
    mkdirSync(task);
    const xdg = join(root, "xdg");
    mkdirSync(xdg, { mode: 0o700 });
    // The login shell's run: XDG_RUNTIME_DIR set (as pam_systemd sets it).
    const release = withEnv({ SCIFI_RUNTIME_DIR: undefined, XDG_RUNTIME_DIR: xdg }, () =>
      lockTaskFolder(join(root, "home-a"), task, "run-login"),
    );
    try {
      // The cron job's run of the same folder, with its own home: no XDG_RUNTIME_DIR.
      let second: unknown;
      try {
        withEnv({ SCIFI_RUNTIME_DIR: undefined, XDG_RUNTIME_DIR: undefined }, () =>
          lockTaskFolder(join(root, "home-b"), task, "run-cron"),
        )();
      } catch (error) {
        second = error;
      }
      expect(second, "two runs hold the same task folder at once").toBeInstanceOf(TaskFolderBusy);
    } finally {
      release();
    }
  });

  it("a second run of one folder with another TMPDIR (another home) is refused", () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38-lock-"));
    const task = join(root, "task");
    mkdirSync(task);
    for (const t of ["tmp-a", "tmp-b"]) mkdirSync(join(root, t), { mode: 0o700 });
    const release = withEnv({ SCIFI_RUNTIME_DIR: undefined, TMPDIR: join(root, "tmp-a") }, () =>
      lockTaskFolder(join(root, "home-a"), task, "run-a"),
    );
    try {
      let second: unknown;
      try {
        withEnv({ SCIFI_RUNTIME_DIR: undefined, TMPDIR: join(root, "tmp-b") }, () =>
          lockTaskFolder(join(root, "home-b"), task, "run-b"),
        )();
      } catch (error) {
        second = error;
      }
      expect(second, "two runs hold the same task folder at once").toBeInstanceOf(TaskFolderBusy);
      expect((second as Error).message).toContain("is in use by run run-a");
    } finally {
      release();
    }
  });
});
