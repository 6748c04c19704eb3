// Lending a task folder to the unprivileged sandbox user, for a root-run scifi (trust.md rule 5):
// every entry the runner may hand out is lchown-ed to that user for the sandbox's life, and the give
// back puts owners, modes and ACLs back as they were. What is never lent (left as it is, at most
// readable to the sandbox through its "other" bits, and recorded):
// - a non-folder with more than one hard link: its twin may sit outside the task folder (a root-owned
//   0600 file linked in before the run), and a chown would hand the twin over too;
// - an entry owned by neither the runner's uid nor the task folder's owner: not theirs to lend;
// - anything that is not a file, folder or link (devices, FIFOs, sockets).
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  lchownSync,
  lstatSync,
  openSync,
  type Stats,
} from "node:fs";
import { AclStripper, currentAcls, readAcls, restoreAcl } from "./acl.ts";
import { type TreeEntry, walkTree } from "./tree-walk.ts";

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

interface Owner {
  uid: number;
  gid: number;
}

/** An entry as it was when the folder was lent. */
interface AtStart extends Owner {
  /** Permission bits (07777). */
  mode: number;
}

/** Who owned what in a task folder before it was lent to a sandbox user (see lendTaskFolder). */
export interface OwnershipRecord {
  root: string;
  /** The owner of the task folder itself: what entries made during the run are given. */
  rootOwner: Owner;
  /** Every entry's owner and mode at the start, by inode. */
  entries: Map<string, AtStart>;
  /** Entries left as they were, not lent (shown paths, with why). */
  kept: { path: string; why: string }[];
  /** The extended ACLs entries had at the start (none on most folders), by inode. */
  acls: Map<string, Buffer>;
}

function inodeKey(stat: Stats): string {
  return `${stat.dev}:${stat.ino}`;
}

/** Why an entry is not lent, or undefined when it may be. */
function notLendable(stat: Stats, lenders: Set<number>): string | undefined {
  if (!(stat.isFile() || stat.isDirectory() || stat.isSymbolicLink())) return "not a file, folder or link";
  if (!stat.isDirectory() && stat.nlink > 1) return `${stat.nlink} hard links (a twin may be outside)`;
  if (!lenders.has(stat.uid)) return `owned by uid ${stat.uid}, neither the runner nor the folder's owner`;
  return undefined;
}

/**
 * Gives every entry of `root` that may be lent (the root included, links themselves, never their
 * targets) to `user`, recording every entry's owner and mode and the folder's ACLs: a root-run scifi
 * lends the task folder to the unprivileged sandbox user this way. `returnTaskFolder` gives
 * everything back. Walks the whole folder (no entry or depth limit). Needs root.
 */
export async function lendTaskFolder(root: string, user: Owner): Promise<OwnershipRecord> {
  const atStart = (await readAcls(root)).byPath;
  const acls = new Map<string, Buffer>();
  const entries = new Map<string, AtStart>();
  const kept: OwnershipRecord["kept"] = [];
  let rootOwner: Owner = { uid: 0, gid: 0 };
  const lenders = new Set<number>([process.getuid?.() ?? 0]);
  await walkTree(
    root,
    (entry) => {
      const { stat } = entry;
      if (entry.depth === 0) {
        rootOwner = { uid: stat.uid, gid: stat.gid };
        lenders.add(stat.uid);
      }
      entries.set(inodeKey(stat), { uid: stat.uid, gid: stat.gid, mode: stat.mode & 0o7777 });
      const acl = atStart.size > 0 ? atStart.get(entry.relBytes.toString("hex")) : undefined;
      if (acl) acls.set(inodeKey(stat), acl);
      const why = notLendable(stat, lenders);
      if (why) kept.push({ path: entry.rel, why });
      else if (stat.uid !== user.uid || stat.gid !== user.gid) chownEntry(entry, user);
      return undefined;
    },
    { maxEntries: Number.POSITIVE_INFINITY },
  );
  return { root, rootOwner, entries, kept, acls };
}

/**
 * Gives the task folder back after a sandbox ran as another user. An entry that existed before gets
 * its recorded owner again and its ACL as it was; its group and other bits get no permission they
 * did not have at the start (the owner's bits stay as the run left them: `chmod +x` on a script
 * survives, `chmod 0777` does not). Entries made during the run get the task folder's owner, no
 * group or other write bit and no ACL. Every set-id bit of a file or folder is cleared (what
 * clearPrivilegeBits does, in the same walk). Walks the whole folder, then throws WalkIncomplete if
 * some folder could not be entered.
 */
export async function returnTaskFolder(record: OwnershipRecord): Promise<void> {
  // Which entries have an ACL now; when getfacl cannot say, every entry is stripped (in batches).
  const withAcl = await currentAcls(record.root).catch(() => undefined);
  // An ACL the folder did not have at the start: removed in batches (an agent can set thousands).
  const stripper = new AclStripper();
  let failure: unknown;
  try {
    await walkTree(
      record.root,
      async (entry) => {
        const { stat } = entry;
        const key = inodeKey(stat);
        const start = record.entries.get(key);
        const owner = start ?? record.rootOwner;
        if (stat.uid !== owner.uid || stat.gid !== owner.gid) chownEntry(entry, owner);
        if (stat.isSymbolicLink()) return undefined; // Linux has no mode (and no ACL) on a link
        const startAcl = record.acls.get(key);
        if (startAcl) {
          await restoreAcl(entry, startAcl);
          // Its permission bits came back with its ACL's base entries; set-id bits setfacl leaves.
          const after = lstatSync(entry.at).mode & 0o7777;
          if ((after & 0o6000) !== 0) chmodEntry(entry, after & ~0o6000);
          return undefined;
        }
        const now = stat.mode & 0o7777;
        const mode = start ? (now & 0o7700) | (now & start.mode & 0o077) : now & ~0o022;
        // A chown by root clears set-id bits of a file; the mode computed from before the chown may
        // set them again, so they are dropped here.
        const wanted = mode & ~0o6000;
        if (withAcl === undefined || (withAcl.size > 0 && withAcl.has(entry.relBytes.toString("hex"))))
          await stripper.add(entry, wanted);
        else if (wanted !== (now & ~0o6000) || (now & 0o6000) !== 0) chmodEntry(entry, wanted);
        return undefined;
      },
      { maxEntries: Number.POSITIVE_INFINITY },
    );
  } catch (error) {
    failure = error;
  }
  // Also after a failed walk: what was batched is stripped, and its descriptors closed.
  await stripper.flush().catch((error: unknown) => {
    failure ??= error;
  });
  if (failure !== undefined) throw failure;
}

function chownEntry(entry: TreeEntry, owner: Owner): void {
  if (entry.dirFd !== undefined) fchownSync(entry.dirFd, owner.uid, owner.gid);
  else {
    try {
      lchownSync(entry.at, owner.uid, owner.gid);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
}

/** fchmod of a folder or a regular file (opened O_NOFOLLOW|O_NONBLOCK, the same inode); others keep theirs. */
function chmodEntry(entry: TreeEntry, mode: number): void {
  if (entry.dirFd !== undefined) {
    fchmodSync(entry.dirFd, mode);
    return;
  }
  if (entry.stat.isSocket()) {
    // A socket cannot be opened; the give back runs after the sandbox is gone, so nothing swaps the
    // entry the walk just saw (lstat: a socket, no link) for another before this chmod.
    chmodSync(entry.at, mode);
    return;
  }
  // A FIFO opens at once read-only without blocking (O_NONBLOCK), so it is changed through its handle.
  if (!entry.stat.isFile() && !entry.stat.isFIFO()) return;
  const fd = openSync(entry.at, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const opened = fstatSync(fd);
    if (opened.ino === entry.stat.ino && (opened.isFile() || opened.isFIFO())) fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}
