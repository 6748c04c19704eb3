// `scifi ctl <run> limits` judges a raise against the site policy the run runs under: a run started
// with `--site-policy FILE` records the file (state.json `sitePolicyFile`), and ctl reads that file,
// not the home's (which allowed more here). Before, ctl read only the home's.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../../runner/run/session/limits.ts";
import { scifi, writePausedRun } from "./paused-run.ts";

it("refuses a wall time past the maxWalltime of the run's own --site-policy file, naming it", async () => {
  const root = mkdtempSync(join(tmpdir(), "scifi-ctl-site-"));
  const home = join(root, "home");
  mkdirSync(home);
  writeFileSync(join(home, "site-policy.yaml"), "maxWalltime: 10h\n");
  const strict = join(root, "cluster-policy.yaml");
  writeFileSync(strict, "maxWalltime: 1h\n");
  const runId = "20261204-030000-t-bbbbbb";
  const limits = { ...DEFAULT_LIMITS, walltimeSec: 1800 };
  const dir = writePausedRun(home, runId, { limits, sitePolicyFile: strict });
  const refused = await scifi(home, ["ctl", runId, "limits", "--walltime", "2h"]);
  expect(refused.code, refused.out).toBe(2);
  expect(refused.out).toContain("maxWalltime (3600 s");
  expect(refused.out).toContain(strict);
  expect(existsSync(join(dir, "control")) ? readdirSync(join(dir, "control")) : []).toEqual([]);
  // Within that file's limit: taken.
  const ok = await scifi(home, ["ctl", runId, "limits", "--walltime", "50m"]);
  expect(ok.code, ok.out).toBe(0);

  // A run without a file of its own is judged by the home's policy, which allows 2 h.
  const other = "20261204-030000-t-cccccc";
  writePausedRun(home, other, { limits });
  const homeOk = await scifi(home, ["ctl", other, "limits", "--walltime", "2h"]);
  expect(homeOk.code, homeOk.out).toBe(0);
});
