// Attacker a41e (issue 41's signal fixes): SIGTERM while the review agent runs a long command in its
// read-only sandbox (the review is the phase a41d did not signal). Real Docker, `scifi run` on Node
// 24, a scripted model (labelled scripted, not a real LLM).
// Doc promise (docs/loop.md, signals): SIGTERM interrupts the run through its stop, stops every live
// sandbox (work, checks or review), exits 143 once the run's own exit has run: hidden assets back in
// the task folder, nothing owned by the sandbox's uid, no outcome (unfinished, resumable).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { waitFor } from "../run/harness.ts";
import { CLI } from "./a41-run.ts";
import {
  containers,
  HIDDEN,
  mountsUnder,
  ownedByOthers,
  unmountAll,
  type Workspace,
  workspace,
} from "./a41d-run.ts";

let ws: Workspace | undefined;
afterEach(() => {
  if (ws) unmountAll(ws.root);
});

/** Scripted (not a real LLM): the work leaves slow.mk and says done; the review runs it (sleeps). */
function script(): string {
  const file = join(mkdtempSync(join(tmpdir(), "a41e-script-")), "script.yaml");
  writeFileSync(
    file,
    [
      "# Scripted (not a real LLM): attacker a41e, SIGTERM during the review.",
      "prescan:",
      '  - json: { node: root, rank: 2, skills: [], context: "", plan: "p", direction: "d" }',
      "work:",
      "  - tool_calls:",
      "      - name: write_file",
      '        input: {"path": "slow.mk", "content": "all:\\n\\tsleep 240\\n"}',
      "  - tool_calls:",
      "      - name: report_done",
      '        input: {"claim": "done", "summary": "done"}',
      "review:",
      "  - tool_calls:",
      "      - name: bash",
      '        input: {"command": "make -f slow.mk"}',
      "  - json:",
      "      items:",
      '        - { id: root/e1, pass: true, evidence: "-" }',
      "      findings: []",
      "      fixes: []",
      "      rank_adjustment: 0",
      "final_review:",
      "  - json: { group_suggestions: [], global_suggestions: [] }",
      "",
    ].join("\n"),
  );
  return file;
}

describe.skipIf(!hasEngine("docker"))(
  "a41e held: SIGTERM during the review (docker)",
  { timeout: 180_000 },
  () => {
    it("exits 143 with the review's sandbox gone, the hidden asset back and no outcome", async () => {
      ws = workspace();
      const child = spawn(
        process.execPath,
        [CLI, "run", ws.taskDir, "--model", `scripted:${script()}`, "--backend", "docker"],
        { env: { ...process.env, SCIFI_HOME: ws.home }, stdio: ["ignore", "ignore", "pipe"] },
      );
      let err = "";
      child.stderr?.on("data", (d: Buffer) => {
        err += d.toString();
      });
      const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
      await waitFor(() => (/phase review/.test(err) ? true : undefined), 120_000);
      // The review sandbox starts and its bash runs `make -f slow.mk` (240 s) meanwhile.
      await new Promise((r) => setTimeout(r, 8_000));
      expect(containers(ws.home), "the review sandbox is up").not.toBe("");
      const sent = Date.now();
      child.kill("SIGTERM");
      const code = await exit;
      expect(code, err).toBe(143);
      expect(Date.now() - sent).toBeLessThan(20_000);
      expect(containers(ws.home)).toBe("");
      expect(existsSync(join(ws.taskDir, HIDDEN)), `${HIDDEN} missing after SIGTERM in the review`).toBe(
        true,
      );
      expect(mountsUnder(ws.root)).toEqual([]);
      expect(ownedByOthers(ws.root, process.getuid?.() ?? 0)).toEqual([]);
      const runs = join(ws.home, "runs");
      const id = /scifi run --resume (\S+)/.exec(err)?.[1] ?? "";
      const history = readFileSync(join(runs, id, "history.jsonl"), "utf8");
      expect(history).not.toContain('"run_end"');
      expect(history).not.toContain('"verdict"');
    });
  },
);
