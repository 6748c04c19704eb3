// A throw-away copy of the task folder for the checks of a SAM with hidden assets. The checks run
// the agent's code while a hidden reference is present; on a copy, nothing that code writes (a copy
// of the reference, say) reaches the task folder the next iteration's agent works in. The copy
// never follows a link (links are copied as links), skips FIFOs, sockets and devices, keeps sparse
// files sparse, and stops at a size cap counted in allocated bytes.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  type Dirent,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { join } from "node:path";
import { RunEnding } from "../run-ending.ts";

export interface CopyOptions {
  /** Allocated bytes the copy may take. */
  maxBytes: number;
  /** Owner of everything copied (when the runner is root and the sandbox is not). */
  owner?: { uid: number; gid: number };
  /** Entries walked at most. */
  maxEntries?: number;
}

export class CopyTooLarge extends RunEnding {
  override name = "CopyTooLarge";
  constructor(message: string) {
    super(message, { status: "failed", limit: "checks_copy", prefix: "checks" });
  }
}

/** Copies `src` into a new folder `dest`; returns the special files it left out (relative paths). */
export function copyForChecks(src: string, dest: string, options: CopyOptions): string[] {
  removeCopy(dest);
  mkdirSync(dest, { mode: 0o755 });
  const skipped: string[] = [];
  const maxEntries = options.maxEntries ?? 500_000;
  let bytes = 0;
  let entries = 0;
  // Folders are made the runner's to fill while copying and get the agent's modes at the end: a
  // runner that is not root cannot copy into a folder the agent left without its write bit.
  const modes: { to: string; mode: number }[] = [];
  const stack: string[] = [""];
  while (stack.length > 0) {
    const rel = stack.pop() as string;
    let names: string[];
    try {
      names = readdirSync(join(src, rel));
    } catch (error) {
      // A folder the agent made unreadable to the runner: copied empty, and listed as left out.
      if (rel === "") throw error;
      skipped.push(`${rel}/`);
      continue;
    }
    for (const name of names) {
      if (++entries > maxEntries)
        throw new CopyTooLarge(`the task folder has more than ${maxEntries} entries`);
      const childRel = rel ? `${rel}/${name}` : name;
      const from = join(src, childRel);
      const to = join(dest, childRel);
      const stat = lstatSync(from);
      if (stat.isDirectory()) {
        mkdirSync(to, { mode: 0o700 });
        modes.push({ to, mode: stat.mode & 0o777 });
        stack.push(childRel);
      } else if (stat.isSymbolicLink()) {
        symlinkSync(readlinkSync(from), to);
      } else if (stat.isFile()) {
        bytes += stat.blocks * 512;
        if (bytes > options.maxBytes) {
          throw new CopyTooLarge(
            `the task folder takes more than ${options.maxBytes} bytes on disk; the checks' copy stops there`,
          );
        }
        try {
          copyRegular(from, to, stat.size, stat.blocks * 512);
        } catch (error) {
          // A file the agent made unreadable to the runner: left out, as the sandbox could not read it.
          if ((error as NodeJS.ErrnoException).code !== "EACCES") throw error;
          skipped.push(childRel);
          continue;
        }
        // Never a setuid or setgid bit in a copy.
        chmodSync(to, stat.mode & 0o777);
      } else {
        skipped.push(childRel);
        continue;
      }
      if (options.owner) lchownSync(to, options.owner.uid, options.owner.gid);
    }
  }
  // Deepest first, so no folder loses its write bit before its subfolders got theirs.
  for (const { to, mode } of modes.reverse()) chmodSync(to, mode);
  if (options.owner) chownSync(dest, options.owner.uid, options.owner.gid);
  return skipped;
}

function copyRegular(from: string, to: string, size: number, allocated: number): void {
  // A file with holes is copied by cp, which writes holes back; a dense one by the kernel.
  if (allocated < size) execFileSync("cp", ["--sparse=always", "--no-dereference", "--", from, to]);
  else copyFileSync(from, to);
}

/**
 * Removes a copy the runner made (the checks' copy, the compare folder), however its folders' modes
 * were left: a folder without its write bit (an output folder the runner made 0555, an agent's
 * read-only folder copied with its mode) cannot be emptied by a runner that is not root, so each
 * real folder is made the owner's to write first. Links are never followed.
 */
export function removeCopy(dir: string, maxEntries = 500_000): void {
  let top: ReturnType<typeof lstatSync>;
  try {
    top = lstatSync(dir);
  } catch {
    return; // nothing there
  }
  if (top.isDirectory()) {
    let entries = 0;
    const stack: string[] = [dir];
    while (stack.length > 0) {
      const at = stack.pop() as string;
      try {
        chmodSync(at, 0o700);
      } catch {
        // Not the runner's to change (root made it): rmSync says so below if it matters.
      }
      let children: Dirent[];
      try {
        children = readdirSync(at, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const entry of children) {
        if (++entries > maxEntries) break;
        if (entry.isDirectory()) stack.push(join(at, entry.name));
      }
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Removes every symlink under `dir` (never following one); returns their relative paths. */
export function removeLinks(dir: string, maxEntries = 500_000): string[] {
  const removed: string[] = [];
  let entries = 0;
  const stack: string[] = [""];
  while (stack.length > 0) {
    const rel = stack.pop() as string;
    for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
      if (++entries > maxEntries)
        throw new CopyTooLarge(`the checks' copy has more than ${maxEntries} entries`);
      const childRel = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isSymbolicLink()) {
        rmSync(join(dir, childRel));
        removed.push(childRel);
      } else if (entry.isDirectory()) stack.push(childRel);
    }
  }
  return removed;
}
