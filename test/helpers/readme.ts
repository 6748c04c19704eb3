// The README's scripted-model example, as the tests that check and run it read it.
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The YAML block of the README's scripted-model section. */
export function readmeScript(): string {
  const readme = readFileSync(join(import.meta.dirname, "..", "..", "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## The scripted model: script format"));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error("README.md: no yaml block in 'The scripted model' section");
  return block;
}
