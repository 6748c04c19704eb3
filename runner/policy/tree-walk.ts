// Walking a task folder the agent can change, for the quota, the change snapshots, the setuid sweep
// and the lending (trust.md rules 4, 5 and 9). What every walk keeps:
// - never follows a link: each folder is opened O_NOFOLLOW relative to its already open parent
//   (`/proc/self/fd/<fd>/<name>` acts as openat(2));
// - names are bytes: a name that is not UTF-8 is walked like any other, and shown escaped (showPath);
// - an explicit stack, not recursion, and at most MAX_OPEN_LEVELS folders open: a folder deeper than
//   that has the rest of its listing read into memory and is closed, and is opened again through its
//   child's `..` (checked to be the same inode) when the walk comes back up; no depth aborts a walk;
// - nothing skipped silently: an entry the walk cannot enter is a problem, and a walk with problems
//   throws WalkIncomplete at its end, after it has done everything else;
// - streamed and cheap: synchronous system calls in slices of a few milliseconds, the event loop
//   served between slices; no allocation per entry beyond its name and its lstat.
import {
  chmodSync,
  closeSync,
  constants,
  type Dir,
  fchmodSync,
  fstatSync,
  lstatSync,
  opendirSync,
  openSync,
  readdirSync,
  type Stats,
} from "node:fs";
import { HostPathRefused } from "./host-path-refused.ts";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** The quota's and the snapshots' walks stop (WalkLimitExceeded) past this many entries. */
export const MAX_WALK_ENTRIES = 500_000;
/** Folders a walk holds open at once (two descriptors each); deeper ones are closed and reopened. */
export const MAX_OPEN_LEVELS = 64;
/** How long one synchronous slice of a walk may run before the event loop gets a turn (ms). */
const SLICE_MS = 8;

export interface WalkLimits {
  /** Entries walked at most (default MAX_WALK_ENTRIES; Infinity for walks that must finish). */
  maxEntries?: number;
  /** Folders below this depth are not entered: a problem, reported at the end (default: none). */
  maxDepth?: number;
}

/** A task folder too large (or too deep, where a depth limit was asked for) to walk within limits. */
export class WalkLimitExceeded extends HostPathRefused {
  override name = "WalkLimitExceeded";
}

/** A walk that did everything it could but could not enter every folder; `problems` says where. */
export class WalkIncomplete extends WalkLimitExceeded {
  override name = "WalkIncomplete";
  readonly problems: string[];
  constructor(root: string, problems: string[]) {
    const shown = problems.slice(0, 5).join("; ");
    const more = problems.length > 5 ? `; and ${problems.length - 5} more` : "";
    super(root, `the walk could not enter every folder: ${shown}${more}`);
    this.problems = problems;
  }
}

/** One folder on the walk's stack. */
interface Frame {
  parent: Frame | undefined;
  name: Buffer;
  depth: number;
  dev: number;
  ino: number;
  /** Open while the folder is among the MAX_OPEN_LEVELS deepest on the stack. */
  fd: number | undefined;
  dir: Dir | undefined;
  /** The rest of the listing in memory (last name first): a small folder's whole, or a closed one's rest. */
  pending: Buffer[] | undefined;
  /** `/proc/self/fd/<fd>/` while open. */
  prefix: Buffer | undefined;
}

/** A folder up to this size (st_size; ext4: some 100 names a 4 KiB block) is listed in one call, a bigger one streamed. */
const LIST_AT_ONCE_BYTES = 64 * 1024;

const SLASH = Buffer.from("/");

function frameRel(frame: Frame | undefined, name?: Buffer): Buffer {
  const parts: Buffer[] = name ? [name] : [];
  for (let f = frame; f?.parent; f = f.parent) parts.push(f.name);
  const out: Buffer[] = [];
  for (let i = parts.length - 1; i >= 0; i--) {
    if (out.length > 0) out.push(SLASH);
    out.push(parts[i] as Buffer);
  }
  return Buffer.concat(out);
}

/** An entry as a walk visits it. */
export class TreeEntry {
  readonly #frame: Frame | undefined;
  /** The entry's own name (bytes); empty for the root. */
  readonly name: Buffer;
  /** lstat of the entry (fstat of the open folder for folders). */
  readonly stat: Stats;
  /** `/proc/self/fd/<parent>/<name>`: names the entry without following a link, during the visit only. */
  readonly at: Buffer;
  /** The open folder (the root included), during the visit only; undefined for anything else. */
  readonly dirFd: number | undefined;
  readonly depth: number;
  #rel: Buffer | undefined;

  constructor(frame: Frame | undefined, name: Buffer, stat: Stats, at: Buffer, dirFd: number | undefined) {
    this.#frame = frame;
    this.name = name;
    this.stat = stat;
    this.at = at;
    this.dirFd = dirFd;
    this.depth = frame ? frame.depth + 1 : 0;
  }

  /** The path relative to the root, as bytes (empty for the root). */
  get relBytes(): Buffer {
    this.#rel ??= this.#frame ? frameRel(this.#frame, this.name) : Buffer.alloc(0);
    return this.#rel;
  }

  /** The path relative to the root as shown (showPath); "" for the root. */
  get rel(): string {
    return showPath(this.relBytes);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A path's bytes as text, one to one: valid UTF-8 stays as it is, except that a backslash is shown
 * as `\\` and a byte that is not part of valid UTF-8 (or a control character) as `\xNN`. Two
 * different names never show the same.
 */
export function showPath(bytes: Buffer): string {
  let plain = true;
  for (const b of bytes) {
    if (b < 0x20 || b === 0x7f || b === 0x5c || b >= 0x80) {
      plain = false;
      break;
    }
  }
  if (plain) return bytes.toString("latin1");
  let out = "";
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] as number;
    if (b === 0x5c) out += "\\\\";
    else if (b < 0x20 || b === 0x7f) out += hexByte(b);
    else if (b < 0x80) out += String.fromCharCode(b);
    else {
      const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
      const text = length > 1 ? decodeOrUndefined(bytes.subarray(i, i + length)) : undefined;
      if (text !== undefined && length <= bytes.length - i) {
        out += text;
        i += length;
        continue;
      }
      out += hexByte(b);
    }
    i++;
  }
  return out;
}

function hexByte(b: number): string {
  return `\\x${b.toString(16).padStart(2, "0")}`;
}

function decodeOrUndefined(bytes: Buffer): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

function fdPath(fd: number, name?: Buffer): Buffer {
  const prefix = Buffer.from(`/proc/self/fd/${fd}${name ? "/" : ""}`);
  return name ? Buffer.concat([prefix, name]) : prefix;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;
}

/** A visit may return `"skip"` for a folder: its contents are not walked. */
export type Visit = (entry: TreeEntry) => undefined | "skip" | Promise<undefined | "skip">;

/**
 * Walks `root` (the root first, then every entry below it, a folder before its contents). Throws
 * WalkLimitExceeded past `maxEntries` (at once), and WalkIncomplete at the end when some folder could
 * not be entered (everything else is visited first).
 */
export async function walkTree(root: string, visit: Visit, limits: WalkLimits = {}): Promise<void> {
  const maxEntries = limits.maxEntries ?? MAX_WALK_ENTRIES;
  const maxDepth = limits.maxDepth ?? Number.POSITIVE_INFINITY;
  const problems: string[] = [];
  const stack: Frame[] = [];
  let open = 0;
  let entries = 0;
  let sliceStart = performance.now();

  const openListing = (frame: Frame, fd: number, size: number): void => {
    const path = `/proc/self/fd/${fd}`;
    if (size <= LIST_AT_ONCE_BYTES) frame.pending = readdirSync(path, { encoding: "buffer" }).reverse();
    else {
      // Streamed: a folder with millions of names is never listed into memory at once. Names as
      // bytes (the types know only text encodings for opendir; the runtime takes "buffer").
      frame.dir = opendirSync(path, { encoding: "buffer" as BufferEncoding, bufferSize: 256 });
    }
    frame.fd = fd;
    frame.prefix = Buffer.from(`${path}/`);
    open++;
  };
  const close = (frame: Frame): void => {
    frame.dir?.closeSync();
    frame.dir = undefined;
    if (frame.fd === undefined) return;
    closeSync(frame.fd);
    frame.fd = undefined;
    frame.prefix = undefined;
    open--;
  };
  // Keeps descriptors bounded: the shallowest open folder (open ones are the top of the stack) reads
  // the rest of its listing into memory and closes.
  const shed = (): void => {
    const frame = stack[stack.length - open];
    if (!frame) return;
    if (frame.dir) {
      const rest: Buffer[] = [];
      for (let d = frame.dir.readSync(); d; d = frame.dir.readSync()) rest.push(d.name as unknown as Buffer);
      frame.pending = rest.reverse();
    }
    close(frame);
  };
  const nextName = (frame: Frame): Buffer | undefined => {
    if (frame.dir) {
      const d = frame.dir.readSync();
      if (d) return d.name as unknown as Buffer;
      frame.dir.closeSync();
      frame.dir = undefined;
    }
    return frame.pending?.pop();
  };
  // Coming back up to a folder that was closed: open it again as its child's `..`, same inode only.
  const reopenParent = (child: Frame): void => {
    const parent = child.parent;
    if (!parent || parent.fd !== undefined || child.fd === undefined) return;
    const fd = openSync(fdPath(child.fd, Buffer.from("..")), DIR_FLAGS);
    const stat = fstatSync(fd);
    if (stat.dev !== parent.dev || stat.ino !== parent.ino) {
      closeSync(fd);
      throw new WalkIncomplete(root, [
        `${showPath(frameRel(parent)) || "the task folder"} was moved while it was walked`,
        ...problems,
      ]);
    }
    parent.fd = fd;
    parent.prefix = Buffer.from(`/proc/self/fd/${fd}/`);
    open++;
  };

  const rootFd = openSync(root, DIR_FLAGS);
  let rootHandedOver = false;
  try {
    const rootStat = fstatSync(rootFd);
    const rootFrame: Frame = {
      parent: undefined,
      name: Buffer.alloc(0),
      depth: 0,
      dev: rootStat.dev,
      ino: rootStat.ino,
      fd: undefined,
      dir: undefined,
      pending: undefined,
      prefix: undefined,
    };
    const verdict = await visit(new TreeEntry(undefined, rootFrame.name, rootStat, fdPath(rootFd), rootFd));
    if (verdict === "skip") return;
    openListing(rootFrame, rootFd, rootStat.size);
    rootHandedOver = true;
    stack.push(rootFrame);
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as Frame;
      const name = nextName(top);
      if (name === undefined) {
        stack.pop();
        reopenParent(top);
        close(top);
        continue;
      }
      if (++entries > maxEntries)
        throw new WalkLimitExceeded(root, `the folder holds more than ${maxEntries} entries`);
      if ((entries & 63) === 0 && performance.now() - sliceStart > SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
      const at = Buffer.concat([top.prefix as Buffer, name]);
      const stat = lstatSync(at, { throwIfNoEntry: false });
      if (!stat) continue; // removed since it was listed: nothing there to visit
      if (!stat.isDirectory()) {
        await visit(new TreeEntry(top, name, stat, at, undefined));
        continue;
      }
      if (top.depth + 1 > maxDepth) {
        problems.push(`folders nest deeper than ${maxDepth} levels (${showPath(frameRel(top, name))})`);
        continue;
      }
      const fd = openFolder(at, stat);
      if (typeof fd === "string") {
        if (fd !== "gone") problems.push(`${showPath(frameRel(top, name))}: ${fd}`);
        continue;
      }
      const opened = fstatSync(fd);
      const frame: Frame = {
        parent: top,
        name,
        depth: top.depth + 1,
        dev: opened.dev,
        ino: opened.ino,
        fd: undefined,
        dir: undefined,
        pending: undefined,
        prefix: undefined,
      };
      let entered = false;
      try {
        if ((await visit(new TreeEntry(top, name, opened, at, fd))) !== "skip") {
          openListing(frame, fd, opened.size);
          entered = true;
          stack.push(frame);
          if (open > MAX_OPEN_LEVELS) shed();
        }
      } finally {
        if (!entered) closeSync(fd);
      }
    }
  } finally {
    for (const frame of stack) close(frame);
    // Once handed to the root's frame, the descriptor is closed (or replaced) with that frame.
    if (!rootHandedOver) closeSync(rootFd);
  }
  if (problems.length > 0) throw new WalkIncomplete(root, problems);
}

/**
 * Opens a sub-folder without following a link: its descriptor, "gone" when it vanished or was
 * swapped for a non-folder since the lstat, or why it cannot be entered. A folder its owner (this
 * uid) made unreadable is opened up (u+rwx) first: a hidden folder must not hide setuid files or
 * used space from the runner.
 */
function openFolder(at: Buffer, stat: Stats): number | string {
  try {
    return openSync(at, DIR_FLAGS);
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR") return "gone";
    if (code === "EACCES" && stat.uid === process.getuid?.()) {
      const again = lstatSync(at, { throwIfNoEntry: false });
      if (!again?.isDirectory() || again.ino !== stat.ino) return "gone";
      try {
        chmodOwnFolder(at, again);
        return openSync(at, DIR_FLAGS);
      } catch (retry) {
        return `cannot be opened (${errorCode(retry) ?? String(retry)})`;
      }
    }
    return `cannot be opened (${code ?? String(error)})`;
  }
}

function chmodOwnFolder(at: Buffer, stat: Stats): void {
  // No O_PATH descriptors in Node, and a mode-000 folder cannot be opened, so its mode is changed by
  // name; the lstat just before showed a folder of this inode (a link there would not be one).
  chmodSync(at, (stat.mode & 0o7777) | 0o700);
}

export interface TreeUsage {
  /** Allocated bytes (st_blocks x 512: a sparse file counts what it really holds), each inode once. */
  allocatedBytes: number;
  entries: number;
}

/**
 * What a task folder takes on disk, without following links (the disk quota's measure): every
 * entry the other walks see, names of any bytes and any depth. Throws WalkLimitExceeded past the
 * entry limit, WalkIncomplete when a folder could not be entered (its size is unknown).
 */
export async function measureTaskFolder(root: string, limits: WalkLimits = {}): Promise<TreeUsage> {
  // Only a non-folder with more than one link can be met twice; the rest need no memory per entry.
  const linked = new Set<string>();
  let allocatedBytes = 0;
  let entries = 0;
  await walkTree(
    root,
    ({ stat }) => {
      entries++;
      if (stat.nlink > 1 && !stat.isDirectory()) {
        const key = `${stat.dev}:${stat.ino}`;
        if (linked.has(key)) return undefined;
        linked.add(key);
      }
      allocatedBytes += stat.blocks * 512;
      return undefined;
    },
    limits,
  );
  return { allocatedBytes, entries };
}

/**
 * Clears the setuid and setgid bits of every file and folder in `root` (the root included), never
 * following a link. Returns the shown paths it changed ("" is the root). Run it after the sandbox
 * has stopped: nothing then changes the tree under the walk. It walks to the end whatever the size
 * or depth (no entry limit unless given), then throws WalkIncomplete if a folder stayed closed to it.
 */
export async function clearPrivilegeBits(root: string, limits: WalkLimits = {}): Promise<string[]> {
  const cleared: string[] = [];
  await walkTree(
    root,
    (entry) => {
      const { stat } = entry;
      if ((stat.mode & 0o6000) === 0 || !(stat.isFile() || stat.isDirectory())) return undefined;
      const mode = stat.mode & 0o1777;
      try {
        if (entry.dirFd !== undefined) fchmodSync(entry.dirFd, mode);
        else chmodRegular(entry.at, stat, mode);
      } catch (error) {
        // Someone else's file (put there by root before the run, not by the sandbox): not ours to change.
        if (errorCode(error) === "EPERM" && stat.uid !== process.getuid?.()) return undefined;
        throw error;
      }
      cleared.push(entry.rel);
      return undefined;
    },
    { maxEntries: Number.POSITIVE_INFINITY, ...limits },
  );
  return cleared;
}

/**
 * fchmod through an O_NOFOLLOW|O_NONBLOCK open of the same regular file (a chmod by name when it is
 * unreadable to us, after checking the name still holds that inode).
 */
export function chmodRegular(at: Buffer, stat: Stats, mode: number): void {
  let fd: number;
  try {
    fd = openSync(at, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    if (errorCode(error) !== "EACCES") throw error;
    const again = lstatSync(at);
    if (again.isFile() && again.ino === stat.ino) chmodSync(at, mode);
    return;
  }
  try {
    const opened = fstatSync(fd);
    if (opened.isFile() && opened.ino === stat.ino) fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}
