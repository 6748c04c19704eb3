// The command allowlist through the real bash tool in a Docker sandbox. Each attack is shown to be
// real first (without an allowlist it runs the planted script, which leaves a marker file), then
// refused under the allowlist, with no marker. Honest controls still run.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveSpec } from "../../runner/policy/resolve.ts";
import { loadSitePolicy, sitePolicyPath } from "../../runner/policy/site.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import { getBackend } from "../../runner/sandbox/registry.ts";
import type { Sandbox } from "../../runner/sandbox/types.ts";
import { runTool, workTools } from "../../runner/tools/registry.ts";
import type { ToolContext } from "../../runner/tools/tool.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";

/** What a task might list; every attack below uses only these names. */
const ALLOW = ["sh", "cat", "ls", "env", "timeout", "find", "xargs", "make", "./stats"];

describe.skipIf(!hasEngine("docker"))(
  "allowlist through the bash tool in a docker sandbox",
  { timeout: 300_000 },
  () => {
    let sandbox: Sandbox;
    let ctx: ToolContext;
    const root = mkdtempSync(join(tmpdir(), "scifi-allow-e2e-"));
    const taskDir = join(root, "task");
    const marker = join(taskDir, "pwned");

    beforeAll(async () => {
      ensureImage();
      mkdirSync(join(root, "home"));
      mkdirSync(join(taskDir, "bin"), { recursive: true });
      writeFileSync(
        join(taskDir, "task.md"),
        "---\nname: allow-e2e\n---\n# A\n\n## To-do\nx\n\n## Expectation\n- y\n",
      );
      // The planted payload: anything that runs it leaves /task/pwned.
      writeFileSync(join(taskDir, "evil.sh"), "touch /task/pwned\n");
      writeFileSync(join(taskDir, "bin", "ls"), "#!/bin/sh\ntouch /task/pwned\n", { mode: 0o755 });
      writeFileSync(join(taskDir, "data.txt"), "alpha\n");
      const parsed = parseSamSync(join(taskDir, "task.md"));
      if (!parsed.ok) throw new Error("test SAM invalid");
      const home = join(root, "home");
      const spec = resolveSpec(parsed.sam, loadSitePolicy(sitePolicyPath(home), false).policy, {
        home,
        runId: `allow-e2e-${process.pid}`,
      });
      sandbox = await (await getBackend("docker")).start(spec);
      ctx = { sandbox, bashTimeoutMs: 10_000, maxOutputChars: 4000 };
    }, 1_800_000);
    afterAll(async () => sandbox?.stop());

    const bash = (command: string, allowCommands?: string[]) =>
      runTool(workTools, "bash", { command }, { ...ctx, allowCommands });

    const attacks: [string, string][] = [
      ["sh evil.sh", "'sh FILE' runs a script file"],
      ["sh < evil.sh", "'sh' without -c reads commands from standard input"],
      ["cat evil.sh | sh", "'sh' without -c reads commands from standard input"],
      ["cat evil.sh | sh -s", "-s reads the commands from standard input"],
      ["sh <<'EOF'\ntouch /task/pwned\nEOF", "'sh' without -c reads commands from standard input"],
      ["sh -c 'sh evil.sh'", "inside 'sh -c': 'sh FILE' runs a script file"],
      ["sh -ec 'sh evil.sh'", "inside 'sh -c'"],
      ["env sh evil.sh", "'sh FILE'"],
      ["timeout 5 sh evil.sh", "'sh FILE'"],
      ["find . -name evil.sh -exec sh {} \\;", "'sh' with an option or script file that is not a plain word"],
      ["ls evil.sh | xargs sh", "'sh' without -c reads commands"],
      ["./bin/ls", "'./bin/ls' (a path runs only when it is on the list exactly"],
      ["PATH=/task/bin:/usr/bin:/bin ls", "a variable assignment in front of a command"],
      ["env PATH=/task/bin:/usr/bin:/bin ls", "'env' with a variable assignment"],
      ["PATH=/task/bin:/usr/bin:/bin; ls", "assigning to 'PATH'"],
    ];

    for (const [command, message] of attacks) {
      it(`runs the payload without an allowlist, and refuses it with one: ${JSON.stringify(command)}`, async () => {
        rmSync(marker, { force: true });
        await bash(command);
        expect(existsSync(marker)).toBe(true); // the form is a real way to run the file
        rmSync(marker, { force: true });
        const out = await bash(command, ALLOW);
        expect(out.ok).toBe(false);
        expect(out.output).toMatch(/^Refused: /);
        expect(out.output).toContain(message);
        expect(existsSync(marker)).toBe(false);
      });
    }

    it("honest controls run under the allowlist", async () => {
      expect(await bash("sh -c 'cat data.txt && ls data.txt'", ALLOW)).toEqual({
        ok: true,
        output: "exit code: 0\nstdout:\nalpha\ndata.txt\n",
      });
      expect(await bash("cat data.txt | sh -ec 'cat'", ALLOW)).toMatchObject({ ok: true });
      expect(await bash("timeout 5 env cat data.txt", ALLOW)).toMatchObject({ ok: true });
      expect(await bash("find . -name data.txt -exec cat {} +", ALLOW)).toMatchObject({ ok: true });
      expect(existsSync(marker)).toBe(false);
    });
  },
);
