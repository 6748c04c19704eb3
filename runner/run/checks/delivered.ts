// What the checks judged is what is delivered (trust rule 1): after the checks the runner records a
// manifest of the task folder (type, size, mtime and inode of every entry; the content hash of each
// regular file up to 1 MiB), and before a PASS, and again after a person confirms it, it compares
// the folder with it. Nothing of the agent's runs after the checks (its sandboxes are stopped, its
// jobs ended), so a difference means something acted behind the verdict: the run fails, naming it.
import { readFileSync, writeFileSync } from "node:fs";
import { walkTree } from "../../policy/host-paths.ts";
import { sha256 } from "../../sha256.ts";

/** Regular files up to this size are hashed too; larger ones are compared by size, mtime and inode. */
const HASHED_BYTES = 1024 ** 2;
/** Names a difference report lists at most. */
const SHOWN = 20;

export type Manifest = Record<string, string>;

export async function deliveredManifest(taskDir: string): Promise<Manifest> {
  const manifest: Manifest = {};
  await walkTree(taskDir, (entry) => {
    if (entry.rel === "") return;
    const s = entry.stat;
    const kind = s.isFile() ? "f" : s.isDirectory() ? "d" : s.isSymbolicLink() ? "l" : "o";
    let line = `${kind}:${s.size}:${s.mtimeMs}:${s.ino}`;
    if (kind === "f" && s.size <= HASHED_BYTES) {
      try {
        line += `:${sha256(readFileSync(entry.at))}`;
      } catch {
        line += ":unreadable";
      }
    }
    manifest[entry.rel] = line;
  });
  return manifest;
}

export function writeManifest(file: string, manifest: Manifest): void {
  writeFileSync(file, JSON.stringify(manifest), { mode: 0o600 });
}

export function readManifest(file: string): Manifest {
  return JSON.parse(readFileSync(file, "utf8")) as Manifest;
}

/** What differs between two manifests, one phrase per path (at most SHOWN, then how many more). */
export function manifestDifferences(before: Manifest, after: Manifest): string[] {
  const found: string[] = [];
  for (const [rel, line] of Object.entries(before)) {
    if (!(rel in after)) found.push(`${rel} removed`);
    else if (after[rel] !== line) found.push(`${rel} changed`);
  }
  for (const rel of Object.keys(after)) if (!(rel in before)) found.push(`${rel} added`);
  return found.length > SHOWN ? [...found.slice(0, SHOWN), `${found.length - SHOWN} more`] : found;
}
