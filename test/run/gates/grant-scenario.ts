// One scenario for every backend: a declared mount whose source is swapped for a link while the
// work sandbox runs. Every sandbox start resolves the grant again, so the check sandbox is refused
// (to /etc: a denied path; to another allowed folder: the grant changed) and no check runs.
import { mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { readHistory } from "../../../runner/memory/history.ts";
import { runTask } from "../../../runner/run/setup.ts";
import { fixture, workspace } from "../harness.ts";

export const SWAPS = [
  { to: "/etc", expect: /grant: policy refused \[mount-denied\]/ },
  {
    to: "other",
    expect: /grant: the grant resolved for sandbox .*-checks1 differs .*new mount .*other -> \/data \(ro\)/,
  },
] as const;

export async function swappedMountIsRefused(backend: string, swap: (typeof SWAPS)[number]): Promise<void> {
  const ws = workspace("verilator-counter-debug");
  const data = join(ws.root, "data");
  const other = join(ws.root, "other");
  mkdirSync(data);
  mkdirSync(other);
  writeFileSync(join(data, "input.txt"), "measured\n");
  writeFileSync(join(other, "input.txt"), "someone else's\n");
  const site = join(ws.root, "site-policy.yaml");
  writeFileSync(site, `allowedMountRoots: [${ws.root}]\n`);
  const sam = readFileSync(ws.sam, "utf8").replace(
    "check_assets:",
    `mounts: [{host: ${data}, container: /data}]\ncheck_assets:`,
  );
  writeFileSync(ws.sam, sam);
  let swapped = false;
  const result = await runTask({
    home: ws.home,
    task: ws.sam,
    backend,
    sitePolicy: site,
    model: `scripted:${fixture("verilator-claim-only.yaml")}`,
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    onStatus: (s) => {
      if (s.phase === "work" && s.step > 0 && !swapped) {
        swapped = true;
        renameSync(data, `${data}.orig`);
        symlinkSync(swap.to === "/etc" ? "/etc" : other, data);
      }
    },
  });
  expect(swapped).toBe(true);
  expect(result.outcome.status).toBe("failed");
  expect(result.outcome.reason).toMatch(swap.expect);
  const history = readHistory(join(result.dir, "history.jsonl"));
  expect(history.some((e) => e.type === "check")).toBe(false);
  expect(history.find((e) => e.type === "limit" && e.limit === "grant")).toBeDefined();
}
