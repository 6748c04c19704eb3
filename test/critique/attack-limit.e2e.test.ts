// Attack (held): the work agent's last iteration. With `iterations: 1` and `critique: block`, a
// verified likely mismatch on the only iteration must not end the run PASSED (docs/critique.md: "The
// `iterations` limit counts it like any failed attempt"; the critique "can only turn a pass into a
// failure"). Docker, scripted (labelled scripted) tracer and critique of the lhco example.
import { readFileSync, writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, runScripted, workspace } from "../run/harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "attack: block on the last iteration (scripted)",
  { timeout: 240_000 },
  () => {
    beforeAll(() => ensureImage());

    it("the sent-back mismatch of the only iteration fails the run", async () => {
      const ws = workspace("lhco-dijet-selection", { iterations: 1 });
      writeFileSync(
        ws.sam,
        readFileSync(ws.sam, "utf8").replace("skills: [lhco]\n", "skills: [lhco]\ncritique: block\n"),
      );
      const { result, history } = await runScripted(ws, "lhco-critique-block.yaml");
      expect(result.outcome.status).not.toBe("passed");
      expect(history.find((e) => e.type === "critique")).toMatchObject({ effect: "sent_back" });
    });
  },
);
