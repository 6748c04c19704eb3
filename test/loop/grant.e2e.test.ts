// Resolve, never replay: every sandbox start of a run derives its mounts again from the SAM and the
// site policy. A declared mount whose source is swapped for a link between two phases is not bound
// again by path: the next sandbox is refused and the run fails, naming what changed.
import { mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runTask } from "../../runner/loop/setup.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, workspace } from "./harness.ts";

describe.skipIf(!hasEngine("docker"))("grant resolved at every sandbox start (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  for (const swap of [
    { to: "/etc", expect: /grant: policy refused \[mount-denied\]/ },
    {
      to: "other",
      expect: /grant: the grant resolved for sandbox .*-checks1 differs .*new mount .*other -> \/data \(ro\)/,
    },
  ]) {
    it(`a mount source swapped for a link to ${swap.to} while the work sandbox runs is not bound by the check sandbox`, async () => {
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
        backend: "docker",
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
    }, 300_000);
  }
});
