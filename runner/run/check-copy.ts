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
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { mode: 0o755 });
  const skipped: string[] = [];
  const maxEntries = options.maxEntries ?? 500_000;
  let bytes = 0;
  let entries = 0;
  const stack: string[] = [""];
  while (stack.length > 0) {
    const rel = stack.pop() as string;
    for (const name of readdirSync(join(src, rel))) {
      if (++entries > maxEntries)
        throw new CopyTooLarge(`the task folder has more than ${maxEntries} entries`);
      const childRel = rel ? `${rel}/${name}` : name;
      const from = join(src, childRel);
      const to = join(dest, childRel);
      const stat = lstatSync(from);
      if (stat.isDirectory()) {
        mkdirSync(to, { mode: stat.mode & 0o777 });
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
        copyRegular(from, to, stat.size, stat.blocks * 512);
        // Never a setuid or setgid bit in a copy.
        chmodSync(to, stat.mode & 0o777);
      } else {
        skipped.push(childRel);
        continue;
      }
      if (options.owner) lchownSync(to, options.owner.uid, options.owner.gid);
    }
  }
  if (options.owner) chownSync(dest, options.owner.uid, options.owner.gid);
  return skipped;
}

function copyRegular(from: string, to: string, size: number, allocated: number): void {
  // A file with holes is copied by cp, which writes holes back; a dense one by the kernel.
  if (allocated < size) execFileSync("cp", ["--sparse=always", "--no-dereference", "--", from, to]);
  else copyFileSync(from, to);
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
