// What each run stage gets of its own (docs/loop.md, Checks in stages): the task folder as the work
// left it, in a throw-away view (check-copy.ts), and the check asset folders built from the runner's
// pristine copies by content (runs/<id>/check-assets/), bound read-only over the view. No path of
// the task folder or of an earlier check's view is resolved to find an asset, so a check that
// renames the folder above an asset folder and plants a look-alike reaches nothing the next check
// runs: that check has a new view, a new asset folder and a new sandbox.
import { chmodSync, copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { PristineSet } from "../../run-folder/state.ts";
import { removeCopy } from "./check-copy.ts";

/**
 * The asset-only folders that are bound as a whole: the outermost ones (a nested one is inside its
 * parent's bind).
 */
export function boundAssetFolders(pristine: PristineSet): string[] {
  return pristine.folders.filter((f) => !pristine.folders.some((outer) => f.startsWith(`${outer}/`)));
}

/**
 * Fills `dest` with every asset-only folder at its task-folder path, holding the non-hidden check
 * assets from the runner's copies (`pristineDir`); empty sub-folders too. Folders 0755, files 0644
 * (0755 with an exec bit): the sandbox's user reads them, the binds make them read-only.
 */
export function buildCheckAssets(dest: string, pristineDir: string, pristine: PristineSet): void {
  freshFolder(dest);
  for (const folder of pristine.folders) makeFolders(dest, folder);
  const bound = boundAssetFolders(pristine);
  for (const file of pristine.files) {
    if (file.kind !== "asset" || file.hidden) continue;
    if (!bound.some((folder) => file.rel.startsWith(`${folder}/`))) continue;
    copyAsset(dest, pristineDir, file);
  }
}

/** `dest` emptied (an earlier folder's read-only parts too) and made again, 0755. */
export function freshFolder(dest: string): void {
  removeCopy(dest);
  mkdirSync(dest, { recursive: true, mode: 0o755 });
  chmodSync(dest, 0o755);
}

/** One asset from the runner's copy to its task-folder path under `dest`: 0644, 0755 with an exec bit. */
export function copyAsset(dest: string, pristineDir: string, file: PristineSet["files"][number]): void {
  makeFolders(dest, dirname(file.rel));
  const to = join(dest, file.rel);
  copyFileSync(join(pristineDir, file.rel), to);
  chmodSync(to, file.mode & 0o111 ? 0o755 : 0o644);
}

/**
 * The folders of `rel` under `root`, 0755: the sandbox's user writes there (a module file beside the
 * assets); the runner's copies stay in runs/<id>/pristine/.
 */
function makeFolders(root: string, rel: string): void {
  let at = root;
  for (const part of rel.split("/").filter((p) => p !== "" && p !== ".")) {
    at = join(at, part);
    mkdirSync(at, { recursive: true, mode: 0o755 });
    chmodSync(at, 0o755);
  }
}
