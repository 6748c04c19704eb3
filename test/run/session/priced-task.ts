// The daemon's trivial task in a folder of its own with a priced scripted model (labelled scripted):
// what the ctl tests and the ctl attacker's runs spend, so a budget can be raised, lowered or reached.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO } from "../harness.ts";

/** The trivial task in a folder of its own, priced through a models config (USD 0.01 a call). */
export function pricedTask(baseURL: string): { home: string; task: string; models: string } {
  const root = mkdtempSync(join(tmpdir(), "scifi-ctl-"));
  const home = join(root, "home");
  const task = join(root, "task");
  mkdirSync(home);
  mkdirSync(task);
  writeFileSync(
    join(task, "task.md"),
    readFileSync(join(REPO, "test", "daemon", "fixtures", "trivial.md"), "utf8"),
  );
  const models = join(root, "models.yaml");
  writeFileSync(
    models,
    [
      "# Scripted models (labelled): a priced scripted server, 10 USD per million input tokens.",
      "models:",
      "  - name: scripted-priced",
      "    provider: anthropic",
      "    model: scripted-ctl",
      `    baseURL: ${baseURL}`,
      "    rank: 1",
      "    kinds: [control, work]",
      "    prices: { input: 10, output: 0, cacheWrite: 0, cacheRead: 0 }",
      "    noApiKey: true",
      "retry: { maxRetries: 0 }",
      "",
    ].join("\n"),
  );
  return { home, task: join(task, "task.md"), models };
}
