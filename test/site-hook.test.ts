// The one way a site hook starts (runner/site-hook.ts): its exit code, its log, its environment,
// null when killed at the timeout, 127 when it cannot start.
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runSiteHook } from "../runner/site-hook.ts";

describe("runSiteHook", () => {
  it("runs with the facts in its environment, appends its output to the log and gives its exit code", async () => {
    const log = join(mkdtempSync(join(tmpdir(), "scifi-hook-")), "logs", "hook.log");
    const code = await runSiteHook({
      command: 'echo "$SCIFI_X"; exit 3',
      env: { SCIFI_X: "fact" },
      log,
      logMode: 0o600,
    });
    expect(code).toBe(3);
    expect(readFileSync(log, "utf8")).toBe("fact\n");
    expect(statSync(log).mode & 0o777).toBe(0o600);
    await runSiteHook({ command: "echo again", env: {}, log });
    expect(readFileSync(log, "utf8")).toBe("fact\nagain\n");
  });

  it("is killed at its timeout (null) and never throws when it cannot start (127)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-hook-"));
    expect(
      await runSiteHook({ command: "sleep 30", env: {}, log: join(dir, "a.log"), timeoutMs: 200 }),
    ).toBeNull();
    // A log that cannot be opened (its folder is a file): nothing starts, nothing throws.
    expect(await runSiteHook({ command: "true", env: {}, log: join(dir, "a.log", "b.log") })).toBe(127);
  });
});
