// The prune decision every backend shares (runner/sandbox/core.ts mayPrune): only this home's
// sandboxes, only on this host, only when the owner is gone (dead, or its pid recycled by a process
// that started at another time), never a run that is live.
import { spawnSync } from "node:child_process";
import { mkdtempSync, symlinkSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { processStart } from "../../runner/pid-lock.ts";
import { currentOwner, homeKey, mayPrune } from "../../runner/sandbox/core.ts";
import { trackLive } from "../../runner/sandbox/live.ts";

const home = mkdtempSync(join(tmpdir(), "scifi-owners-"));
const deadPid = spawnSync("true").pid ?? 0;
const dead = { host: hostname(), pid: deadPid, home: homeKey(home) };

describe("mayPrune", () => {
  it("removes this home's sandbox whose owner is dead", () => {
    expect(mayPrune("r1", dead, { home })).toBe(true);
  });

  it("keeps one whose owner lives, also when it is this very process", () => {
    expect(mayPrune("r1", currentOwner({ home }), { home })).toBe(false);
  });

  it("removes one whose pid now belongs to a process started at another time (recycled)", () => {
    const start = processStart(process.pid);
    expect(start).toBeDefined();
    const recycled = { ...currentOwner({ home }), procStart: String(Number(start) - 1) };
    expect(mayPrune("r1", recycled, { home })).toBe(true);
  });

  it("keeps another home's, another host's and one without an owner or a home", () => {
    const other = mkdtempSync(join(tmpdir(), "scifi-owners-other-"));
    expect(mayPrune("r1", dead, { home: other })).toBe(false);
    expect(mayPrune("r1", { ...dead, host: `not-${hostname()}` }, { home })).toBe(false);
    expect(mayPrune("r1", undefined, { home })).toBe(false);
    expect(mayPrune("r1", { host: dead.host, pid: dead.pid }, { home })).toBe(false);
    expect(mayPrune("r1", { ...dead, pid: Number.NaN }, { home })).toBe(false);
  });

  it("matches the home through links and relative spellings", () => {
    const link = join(mkdtempSync(join(tmpdir(), "scifi-owners-link-")), "home");
    symlinkSync(home, link);
    expect(mayPrune("r1", dead, { home: link })).toBe(true);
  });

  it("keeps a run that is listed live or is live in this process", () => {
    expect(mayPrune("r1", dead, { home, liveRunIds: new Set(["r1"]) })).toBe(false);
    const untrack = trackLive({ runId: "r2", stop: async () => {} });
    try {
      expect(mayPrune("r2", dead, { home })).toBe(false);
    } finally {
      untrack();
    }
  });
});
