// A throw-away copy of the task folder: each run stage's view of it (phases/checks.ts). A check runs
// the agent's code; on a copy of its own, nothing that code writes, removes or renames reaches
// another check, the review or the delivered folder. The copy
// never follows a link (links are copied as links), skips FIFOs, sockets and devices, keeps sparse
// files sparse, and stops at a size cap counted in allocated bytes.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  copyFileSync,
  type Dirent,
  lchownSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { join } from "node:path";
import { showPath } from "../../policy/tree-walk.ts";
import { RunEnding } from "../../run-ending.ts";

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

const SLASH = Buffer.from("/");

/** `base/rel` as bytes: names that are not UTF-8 stay what they are. */
function under(base: Buffer, rel: Buffer): Buffer {
  return rel.length === 0 ? base : Buffer.concat([base, SLASH, rel]);
}

function child(rel: Buffer, name: Buffer): Buffer {
  return rel.length === 0 ? name : Buffer.concat([rel, SLASH, name]);
}

/**
 * Copies `src` into a new folder `dest`; returns the special files it left out (paths as showPath
 * writes them). Names are bytes (a name that is not UTF-8 is copied like any other); an explicit
 * stack, so any depth a path can name (deeper entries are left out and listed).
 */
/** Paths this long or longer are not copied: Linux refuses a path of PATH_MAX (4096) bytes. */
const PATH_BYTES = 4000;

export function copyForChecks(src: string, dest: string, options: CopyOptions): string[] {
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { mode: 0o755 });
  const from0 = Buffer.from(src);
  const to0 = Buffer.from(dest);
  const skipped: string[] = [];
  const maxEntries = options.maxEntries ?? 500_000;
  let bytes = 0;
  let entries = 0;
  // Folders are made the runner's to fill while copying and get the agent's modes at the end: a
  // runner that is not root cannot copy into a folder the agent left without its write bit.
  const modes: { to: Buffer; mode: number }[] = [];
  const stack: Buffer[] = [Buffer.alloc(0)];
  while (stack.length > 0) {
    const rel = stack.pop() as Buffer;
    let names: Buffer[];
    try {
      names = readdirSync(under(from0, rel), { encoding: "buffer" });
    } catch (error) {
      // A folder the agent made unreadable to the runner: copied empty, and listed as left out.
      if (rel.length === 0) throw error;
      skipped.push(`${showPath(rel)}/`);
      continue;
    }
    for (const name of names) {
      if (++entries > maxEntries)
        throw new CopyTooLarge(`the task folder has more than ${maxEntries} entries`);
      const childRel = child(rel, name);
      const from = under(from0, childRel);
      const to = under(to0, childRel);
      // Past what a path may hold (a folder chain thousands deep): left out with what is under it,
      // and listed, as the checks could not name it either.
      if (Math.max(from.length, to.length) >= PATH_BYTES) {
        skipped.push(`${showPath(childRel)} (the path is too long to copy)`);
        continue;
      }
      const stat = lstatSync(from);
      if (stat.isDirectory()) {
        mkdirSync(to, { mode: 0o700 });
        modes.push({ to, mode: stat.mode & 0o777 });
        stack.push(childRel);
      } else if (stat.isSymbolicLink()) {
        symlinkSync(readlinkSync(from, { encoding: "buffer" }), to);
      } else if (stat.isFile()) {
        bytes += stat.blocks * 512;
        if (bytes > options.maxBytes) {
          throw new CopyTooLarge(
            `the task folder takes more than ${sizeText(options.maxBytes)} on disk (allocated blocks, holes not counted; reached at ${showPath(childRel)}), so the checks cannot have a copy of it of their own and none runs. Keep large data outside the task folder, in a declared mount (SAM \`mounts:\`, read-only in the checks)`,
          );
        }
        try {
          copyRegular(from, to, to0, stat.size, stat.blocks * 512);
        } catch (error) {
          // A file the agent made unreadable to the runner: left out, as the sandbox could not read it.
          if ((error as NodeJS.ErrnoException).code !== "EACCES") throw error;
          skipped.push(showPath(childRel));
          continue;
        }
        // Never a setuid or setgid bit in a copy.
        chmodSync(to, stat.mode & 0o777);
      } else {
        skipped.push(showPath(childRel));
        continue;
      }
      if (options.owner) lchownSync(to, options.owner.uid, options.owner.gid);
    }
  }
  // Deepest first, so a folder without its write bit is given its mode after everything in it.
  for (const { to, mode } of modes.reverse()) chmodSync(to, mode);
  if (options.owner) chownSync(dest, options.owner.uid, options.owner.gid);
  return skipped;
}

/** Bytes as a person reads them: GiB or MiB when whole, else bytes. */
function sizeText(bytes: number): string {
  for (const [unit, size] of [
    ["GiB", 1024 ** 3],
    ["MiB", 1024 ** 2],
    ["KiB", 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return `${bytes} bytes`;
}

let sparseCopies = 0;

function copyRegular(from: Buffer, to: Buffer, destRoot: Buffer, size: number, allocated: number): void {
  if (allocated >= size) {
    copyFileSync(from, to);
    return;
  }
  // A file with holes is copied by cp, which writes holes back. cp takes names as text, so it
  // copies from this process's descriptor of the file to a temporary ASCII name, renamed after.
  const fd = openSync(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  const temp = Buffer.from(
    `${destRoot.toString("latin1")}/.scifi-sparse-${process.pid}-${++sparseCopies}`,
    "latin1",
  );
  try {
    execFileSync("cp", ["--sparse=always", "--", `/proc/${process.pid}/fd/${fd}`, temp.toString("latin1")]);
    renameSync(temp, to);
  } finally {
    closeSync(fd);
    rmSync(temp, { force: true });
  }
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
