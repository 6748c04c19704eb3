// A lend outlives its process on disk. A root-run scifi lends the task folder to the sandbox user
// (lending.ts) and keeps who owned what in memory; a run killed (SIGKILL, a crash, the machine)
// before its give back would leave the folder owned by the sandbox user, and the next lend would
// take that user for every entry's owner and give the folder back to it. So each lend writes its
// record, first a short one (the folder's owner, before the walk) and then the whole one, to
// `<runtime>/lent/<dev>-<ino>.<pid>.json` (task-folder-lock.ts runtimeDir: outside every home and
// every sandbox, so the agent cannot reach it); the give back removes it. Before a new lend of the
// same folder, a record whose process is dead is given back first: the oldest such (the owners
// before any lend), by its whole record, or by the short one (every entry to the folder's owner,
// no group or other write bit, no ACL) when the process died inside its walk.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { writeJsonAtomic } from "../atomic-write.ts";
import { ownerAlive, type PidLockOwner, processStart } from "../pid-lock.ts";
import { runtimeDir } from "../task-folder-lock.ts";
import { lendTaskFolder, type OwnershipRecord, returnTaskFolder } from "./lending.ts";

interface Owner {
  uid: number;
  gid: number;
}

interface SavedLend extends PidLockOwner {
  version: 1;
  root: string;
  rootOwner: Owner;
  /** False in the short record written before the walk. */
  whole: boolean;
  entries: [string, Owner & { mode: number }][];
  kept: { path: string; why: string }[];
  /** ACLs as hex. */
  acls: [string, string][];
}

function lentDir(): string {
  const dir = join(runtimeDir(), "lent");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

function folderKey(root: string): string {
  const stat = statSync(root);
  return `${stat.dev}-${stat.ino}`;
}

function fileOf(root: string, pid = process.pid): string {
  return join(lentDir(), `${folderKey(root)}.${pid}.json`);
}

function save(record: OwnershipRecord, whole: boolean, file: string): void {
  const start = processStart(process.pid);
  const saved: SavedLend = {
    version: 1,
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    ...(start !== undefined ? { procStart: start } : {}),
    root: record.root,
    rootOwner: record.rootOwner,
    whole,
    entries: [...record.entries],
    kept: record.kept,
    acls: [...record.acls].map(([key, acl]) => [key, acl.toString("hex")]),
  };
  writeJsonAtomic(file, saved, { mode: 0o600 });
}

function restored(saved: SavedLend): OwnershipRecord {
  return {
    root: saved.root,
    rootOwner: saved.rootOwner,
    entries: new Map(saved.entries),
    kept: saved.kept,
    acls: new Map(saved.acls.map(([key, hex]) => [key, Buffer.from(hex, "hex")])),
  };
}

/**
 * Gives the folder back by the records of lends whose process is gone (the oldest one's owners),
 * then removes those records; returns how many there were. Records of live processes stay.
 */
export async function giveBackAbandoned(root: string): Promise<number> {
  const dir = lentDir();
  const prefix = `${folderKey(root)}.`;
  const dead: { file: string; saved: SavedLend }[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(prefix) || !name.endsWith(".json")) continue;
    const file = join(dir, name);
    let saved: SavedLend;
    try {
      saved = JSON.parse(readFileSync(file, "utf8")) as SavedLend;
    } catch {
      continue; // a torn write of a live lend (atomic writes leave none otherwise)
    }
    if (saved.host === hostname() && !ownerAlive(saved)) dead.push({ file, saved });
  }
  if (dead.length === 0) return 0;
  dead.sort((a, b) => a.saved.startedAt.localeCompare(b.saved.startedAt));
  const oldest = dead[0]?.saved as SavedLend;
  await returnTaskFolder(restored({ ...oldest, root }));
  for (const { file } of dead) unlinkSync(file);
  return dead.length;
}

/**
 * lendTaskFolder with its record on disk: an abandoned lend of the folder is given back first, the
 * short record is written before the walk and the whole one after it. `forget` after the give back.
 */
export async function lendRecorded(root: string, user: Owner): Promise<OwnershipRecord> {
  await giveBackAbandoned(root);
  const file = fileOf(root);
  // This process's earlier lend of the folder that was not given back completely: its record holds
  // the truer owners, and stays.
  const earlier = existsSync(file);
  const stat = statSync(root);
  const short: OwnershipRecord = {
    root,
    rootOwner: { uid: stat.uid, gid: stat.gid },
    entries: new Map(),
    kept: [],
    acls: new Map(),
  };
  if (!earlier) save(short, false, file);
  const record = await lendTaskFolder(root, user);
  if (!earlier) save(record, true, file);
  return record;
}

/** The folder was given back: its record goes. */
export function forgetLend(root: string): void {
  try {
    const file = fileOf(root);
    if (existsSync(file)) unlinkSync(file);
  } catch {
    // the folder itself is gone: nothing to give back to it either
  }
}
