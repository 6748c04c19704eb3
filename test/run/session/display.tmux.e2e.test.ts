// The live display in a real terminal (tmux, as users' shells are) at 80 and 250 columns: a real
// `scifi run` (Docker, the README's scripted example) with `approval: [finish]`. While it runs, the
// block fits the width (never wrapped; the cut itself: test/run/session/display.test.ts); at the prompt the block is gone and
// the question shows; the decision is printed ("approved ... by USER at HH:MM: note"); every event
// line carries its iteration; at the end no copy of the block is left, and the outcome is there.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../../helpers/engines.ts";
import { readmeScript } from "../../helpers/readme.ts";
import { ensureImage, REPO, workspace } from "../harness.ts";

const hasTmux = (() => {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

const LONG_NAME = "damped-oscillation-fit-with-a-long-name";

function tmux(...args: string[]): string {
  return execFileSync("tmux", args, { encoding: "utf8" });
}

/** The pane as a person sees it, wrapped lines joined (-J), with the scrollback. */
function screen(session: string): string[] {
  return tmux("capture-pane", "-p", "-J", "-S", "-500", "-t", session).split("\n");
}

async function until(session: string, what: string, probe: (lines: string[]) => boolean): Promise<string[]> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const lines = screen(session);
    if (probe(lines)) return lines;
    if (Date.now() > deadline) throw new Error(`tmux: timed out waiting for ${what}:\n${lines.join("\n")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(!hasEngine("docker") || !hasTmux)("the live display in tmux (docker, scripted)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it.each([80, 250])(
    "at %i columns: fits, suspends for the approval, says the decision, ends clean",
    async (columns) => {
      const ws = workspace("root-gaussian-fit");
      const sam = readFileSync(ws.sam, "utf8").replace(
        "name: root-gaussian-fit",
        `name: ${LONG_NAME}\napproval: [finish]`,
      );
      writeFileSync(ws.sam, sam);
      // A pause in the work pass, so the block is on the screen long enough to be read.
      const script = readmeScript().replace(
        '  - tool_calls: [{ name: bash, input: { command: "python3 fit_gaussian.py && cat fit.json" } }]',
        '  - tool_calls: [{ name: bash, input: { command: "python3 fit_gaussian.py && cat fit.json" } }]\n    delay_ms: 2500',
      );
      writeFileSync(join(ws.root, "demo.yaml"), script);
      const session = `scifi-display-${columns}-${process.pid}`;
      const command = `cd ${ws.root} && SCIFI_HOME=${ws.home} SCIFI_APPROVAL_POLL_MS=200 ${process.execPath} ${join(REPO, "bin/scifi.js")} run task --model scripted:demo.yaml; echo EXIT=$?; sleep 300`;
      tmux("new-session", "-d", "-s", session, "-x", String(columns), "-y", "50", command);
      try {
        // The block while the work pass runs: each of its lines within the width, the long one cut.
        const running = await until(session, "the live block", (l) =>
          l.some((x) => x.startsWith("  left in pass:")),
        );
        const header = running.find((l) => l.startsWith("scifi run "));
        expect(header).toBeDefined();
        for (const line of running.filter((l) => /^(scifi run | {2}(iteration|tokens|left in pass))/.test(l)))
          expect([...line].length).toBeLessThan(columns);
        // Nothing cut where it fits (the run id is at most 73 characters: runner/run-id.ts).
        expect(header).toMatch(/^scifi run \d{8}-\d{6}-damped-oscillation-fit-[a-z-]+-[0-9a-f]{6}$/);

        // The prompt: the question is shown, and no copy of the block.
        const asking = await until(session, "the approval prompt", (l) =>
          l.some((x) => x.includes("approve? [y/n")),
        );
        expect(asking.filter((l) => l.startsWith("  left in pass:"))).toEqual([]);
        expect(asking.some((l) => l.startsWith("approval request "))).toBe(true);
        // Events above it carry their iteration.
        expect(asking).toContain("iteration 1 check root/check-1 passed (exit 0)");
        expect(asking.some((l) => l.startsWith("iteration 1 review of root passed"))).toBe(true);
        tmux("send-keys", "-t", session, "y: the fit looks right", "Enter");

        const end = await until(session, "the run's end", (l) => l.some((x) => x.startsWith("EXIT=")));
        expect(end).toContain("EXIT=0");
        expect(
          end.some((l) =>
            new RegExp(
              `^approved \\S+ by ${userInfo().username} at \\d\\d:\\d\\d: the fit looks right$`,
            ).test(l),
          ),
        ).toBe(true);
        // The final block is replaced by the outcome: no stale copy, the verdict there.
        expect(end.filter((l) => l.startsWith("  left in pass:") || l.startsWith("scifi run "))).toEqual([]);
        expect(end.some((l) => l.startsWith("PASSED: "))).toBe(true);
      } finally {
        tmux("kill-session", "-t", session);
      }
    },
    300_000,
  );
});
