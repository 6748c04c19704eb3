// Owner records of instances (who started each) and the prune of those whose owner is gone.
import { readdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import * as core from "../core.ts";
import type * as contract from "../types.ts";
import { type BackendContext, listInstances, stopInstance } from "./engine.ts";

/** Who started an instance: `<stateDir>/scifi-<run>-XXXXXX/owner.json` (prune reads it). */
export interface OwnerRecord extends contract.SandboxOwner {
  instance: string;
  runId: string;
}

export const OWNER_FILE = "owner.json";

/**
 * Stops this home's instances whose owner is gone (core.ts mayPrune) and removes their state
 * folders. An instance is judged by the owner records in the state folder; one without a record
 * (another state folder, an older scifi) is left alone, and so is one that any record keeps.
 */
export async function pruneInstances(ctx: BackendContext, scope: contract.PruneScope): Promise<string[]> {
  const running = new Set(await listInstances(ctx));
  const records = await ownerRecords(ctx.stateDir);
  const kept = new Set(records.filter((r) => !core.mayPrune(r.runId, r, scope)).map((r) => r.instance));
  const removed: string[] = [];
  for (const record of records) {
    if (kept.has(record.instance)) continue;
    if (running.delete(record.instance)) {
      await stopInstance(ctx, record.instance);
      removed.push(`${record.instance} (run ${record.runId})`);
    }
    await rm(record.dir, { recursive: true, force: true });
  }
  return removed;
}

/** The owner records of `<stateDir>/scifi-*-XXXXXX/owner.json`, in folders this user owns. */
export async function ownerRecords(stateDir: string): Promise<(OwnerRecord & { dir: string })[]> {
  const uid = process.getuid?.();
  const found: (OwnerRecord & { dir: string })[] = [];
  for (const entry of await readdir(stateDir).catch(() => [] as string[])) {
    if (!/^scifi-.+-[A-Za-z0-9]{6}$/.test(entry)) continue;
    const dir = join(stateDir, entry);
    const info = await stat(dir).catch(() => undefined);
    if (!info?.isDirectory() || (uid !== undefined && info.uid !== uid)) continue;
    const text = await readFile(join(dir, OWNER_FILE), "utf8").catch(() => "");
    try {
      const record = JSON.parse(text) as OwnerRecord;
      if (typeof record.instance === "string" && typeof record.runId === "string")
        found.push({ ...record, dir });
    } catch {
      // no record (an older scifi's folder) or a torn one: not provably ours to remove
    }
  }
  return found;
}
