// Extended POSIX ACLs of a lent task folder (runner/policy/lending.ts). A sandbox user that owns an
// entry can give itself (or anyone) an ACL entry (`user:65534:rwx`) that a chown back does not
// remove; the give back therefore removes every extended ACL and puts back the ones the folder had at
// the start. Node has no xattr calls, so this uses getfacl/setfacl (the Debian package `acl`); a
// root-run scifi without them cannot lend safely and refuses to.
import { execFile, execFileSync } from "node:child_process";
import { closeSync, constants, fchmodSync, fstatSync, openSync } from "node:fs";
import { promisify } from "node:util";
import { showPath, type TreeEntry } from "./tree-walk.ts";

const run = promisify(execFile);
const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;
const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" };

/** The extended ACLs an entry had at the start, by the entry's path bytes (hex) relative to the root. */
export interface AclRecord {
  byPath: Map<string, Buffer>;
}

let tools: boolean | undefined;

function haveTools(): boolean {
  if (tools === undefined) {
    try {
      execFileSync("getfacl", ["--version"], { stdio: "ignore", env: ENV });
      execFileSync("setfacl", ["--version"], { stdio: "ignore", env: ENV });
      tools = true;
    } catch {
      tools = false;
    }
  }
  return tools;
}

export class AclToolsMissing extends Error {
  override name = "AclToolsMissing";
  constructor() {
    super(
      "getfacl/setfacl not found: a root-run scifi lends the task folder to the sandbox user and must take back the ACLs that user may set; install the acl package (apt-get install acl) or run scifi as a normal user",
    );
  }
}

/**
 * Every entry below (and of) `root` that has an extended ACL (access or default), with the ACL's
 * entries as getfacl prints them. getfacl walks physically (-P): no link is followed.
 */
export async function readAcls(root: string): Promise<AclRecord> {
  if (!haveTools()) throw new AclToolsMissing();
  const { stdout } = await run("getfacl", ["-R", "-P", "-n", "--skip-base", "--absolute-names", "--", root], {
    encoding: "buffer",
    env: ENV,
    maxBuffer: 256 * 1024 * 1024,
  });
  return { byPath: parseDump(stdout, root) };
}

/** The dump's blocks by path relative to `root` (hex of its bytes), each the block's ACL lines. */
function parseDump(dump: Buffer, root: string): Map<string, Buffer> {
  const result = new Map<string, Buffer>();
  const prefix = Buffer.from(root.endsWith("/") ? root : `${root}/`);
  const rootBytes = Buffer.from(root.replace(/\/+$/, ""));
  for (const block of splitBlocks(dump)) {
    const header = block[0];
    if (!header?.subarray(0, 8).equals(Buffer.from("# file: "))) continue;
    const path = unquote(header.subarray(8));
    const rel = path.equals(rootBytes)
      ? Buffer.alloc(0)
      : path.subarray(0, prefix.length).equals(prefix)
        ? path.subarray(prefix.length)
        : undefined;
    if (rel === undefined) continue;
    const lines = block.filter((line) => line.length > 0 && line[0] !== 0x23);
    result.set(rel.toString("hex"), Buffer.concat(lines.flatMap((l) => [l, Buffer.from("\n")])));
  }
  return result;
}

function splitBlocks(dump: Buffer): Buffer[][] {
  const blocks: Buffer[][] = [];
  let current: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= dump.length; i++) {
    if (i < dump.length && dump[i] !== 0x0a) continue;
    const line = dump.subarray(start, i);
    start = i + 1;
    if (line.length === 0) {
      if (current.length > 0) blocks.push(current);
      current = [];
    } else current.push(line);
  }
  if (current.length > 0) blocks.push(current);
  return blocks;
}

/** getfacl writes a byte it will not print as `\ooo` (octal) and a backslash as `\\`. */
function unquote(bytes: Buffer): Buffer {
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if (
      b === 0x5c &&
      i + 3 < bytes.length + 0 &&
      /^[0-7]{3}$/.test(bytes.subarray(i + 1, i + 4).toString())
    ) {
      out.push(Number.parseInt(bytes.subarray(i + 1, i + 4).toString(), 8));
      i += 3;
    } else if (b === 0x5c && bytes[i + 1] === 0x5c) {
      out.push(0x5c);
      i++;
    } else out.push(b);
  }
  return Buffer.from(out);
}

/** The paths (hex of bytes) below `root` that have an extended ACL now. */
export async function currentAcls(root: string): Promise<Set<string>> {
  return new Set((await readAcls(root)).byPath.keys());
}

/**
 * Puts `entry`'s ACL back as it was at the start: every extended entry removed (a folder's default
 * ACL too), then the start's set again when it had one. The entry is named by a descriptor of its
 * own (`/proc/<pid>/fd/<fd>`, ASCII whatever its name's bytes), opened without following a link;
 * setfacl follows that one magic link to the very inode the walk saw. Sockets and devices (which
 * the sandbox cannot make) are not opened.
 */
export async function restoreAcl(entry: TreeEntry, start: Buffer | undefined): Promise<void> {
  const { stat } = entry;
  let fd = entry.dirFd;
  let own = false;
  if (fd === undefined) {
    if (!(stat.isFile() || stat.isFIFO())) return;
    fd = openSync(entry.at, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    own = true;
  }
  try {
    const opened = fstatSync(fd);
    if (opened.ino !== stat.ino || opened.dev !== stat.dev) return; // replaced since: not this entry
    const target = `/proc/${process.pid}/fd/${fd}`;
    const flags = stat.isDirectory() ? ["-b", "-k"] : ["-b"];
    await run("setfacl", [...flags, "--", target], { env: ENV });
    if (!start) return;
    const child = execFile("setfacl", ["-M", "-", "--", target], { env: ENV });
    const done = new Promise<void>((resolve, reject) => {
      child.on("error", reject);
      child.on("exit", (code) =>
        code === 0
          ? resolve()
          : reject(
              new Error(`setfacl could not restore the ACL of ${showPath(entry.relBytes)} (exit ${code})`),
            ),
      );
    });
    child.stdin?.end(start);
    await done;
  } finally {
    if (own) closeSync(fd);
  }
}

/** Entries one setfacl call strips at once. */
const STRIP_BATCH = 256;

/**
 * Removes every extended ACL (a folder's default ACL too) of many entries with few setfacl calls,
 * then gives each the permission bits meant for it (after the strip: with an ACL, chmod sets the
 * mask, and a strip would leave the `group::` entry the agent chose). Each entry is held by a
 * descriptor of its own, opened without following a link, until its batch is done; `flush` at the
 * end (also on failure: it closes them).
 */
export class AclStripper {
  #files: { fd: number; mode: number }[] = [];
  #dirs: { fd: number; mode: number }[] = [];

  async add(entry: TreeEntry, mode: number): Promise<void> {
    const { stat } = entry;
    const dir = stat.isDirectory();
    if (!(dir || stat.isFile() || stat.isFIFO())) return;
    // A folder is open already (the walk's descriptor, valid during the visit only): opened again
    // through it, the very same folder; anything else by its name, never following a link.
    const fd =
      dir && entry.dirFd !== undefined
        ? openSync(`/proc/self/fd/${entry.dirFd}`, O_RDONLY | O_DIRECTORY)
        : openSync(entry.at, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    const opened = fstatSync(fd);
    if (opened.ino !== stat.ino || opened.dev !== stat.dev) {
      closeSync(fd); // replaced since: not this entry
      return;
    }
    (dir ? this.#dirs : this.#files).push({ fd, mode });
    if (this.#files.length + this.#dirs.length >= STRIP_BATCH) await this.flush();
  }

  async flush(): Promise<void> {
    const files = this.#files;
    const dirs = this.#dirs;
    this.#files = [];
    this.#dirs = [];
    const paths = (items: { fd: number }[]) => items.map(({ fd }) => `/proc/${process.pid}/fd/${fd}`);
    try {
      if (files.length > 0) await run("setfacl", ["-b", "--", ...paths(files)], { env: ENV });
      if (dirs.length > 0) await run("setfacl", ["-b", "-k", "--", ...paths(dirs)], { env: ENV });
      for (const { fd, mode } of [...files, ...dirs]) fchmodSync(fd, mode);
    } finally {
      for (const { fd } of [...files, ...dirs]) closeSync(fd);
    }
  }
}
