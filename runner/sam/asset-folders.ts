// Which folders hold only check assets. Such a folder is the runner's to restore exactly before the
// checks (agent-added files there are removed); an asset that shares its folder with other files can
// be shadowed by a file the agent adds next to it (an included header, an imported module).
import { readdirSync } from "node:fs";
import { join, posix } from "node:path";

/**
 * Folders (relative to `rootDir`, `/`-separated) whose every entry is an asset or such a folder
 * itself. The root folder never is one: it holds the deliverables.
 */
export function assetOnlyFolders(rootDir: string, assets: ReadonlySet<string>): string[] {
  const candidates = new Set<string>();
  for (const rel of assets) {
    for (let dir = posix.dirname(rel); dir !== "."; dir = posix.dirname(dir)) candidates.add(dir);
  }
  // Deepest first, so a parent can count an asset folder inside it as its own.
  const ordered = [...candidates].sort((a, b) => b.split("/").length - a.split("/").length);
  const folders = new Set<string>();
  for (const dir of ordered) {
    let entries: ReturnType<typeof listDir>;
    try {
      entries = listDir(join(rootDir, dir));
    } catch {
      continue;
    }
    const onlyAssets = entries.every((entry) => {
      const rel = `${dir}/${entry.name}`;
      return entry.isFile() ? assets.has(rel) : entry.isDirectory() && folders.has(rel);
    });
    if (onlyAssets && entries.length > 0) folders.add(dir);
  }
  return [...folders].sort();
}

/** Folders holding an asset next to files that are not assets (`.` for the root folder). */
export function sharedAssetFolders(rootDir: string, assets: ReadonlySet<string>): string[] {
  const clean = new Set(assetOnlyFolders(rootDir, assets));
  const dirs = new Set([...assets].map((rel) => posix.dirname(rel)));
  return [...dirs].filter((dir) => !clean.has(dir)).sort();
}

function listDir(dir: string) {
  return readdirSync(dir, { withFileTypes: true });
}
