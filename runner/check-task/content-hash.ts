// What an audit is cached by: the content of the task folder (every entry below it: a file by its
// permission bits and SHA-256, a link by its target, a folder as such; names as bytes, no link
// followed: policy/tree-walk.ts), so an audit is reused exactly while nothing it judged changed.
import type { Hash } from "node:crypto";
import { readlinkSync } from "node:fs";
import { walkTree } from "../policy/tree-walk.ts";
import { fileSha256 } from "../sha256.ts";

/** Feeds every entry below `dir`, sorted by name, into `hash`. */
export async function hashFolder(dir: string, hash: Hash): Promise<void> {
  const entries: [string, string][] = [];
  await walkTree(dir, (entry) => {
    if (entry.depth === 0) return undefined;
    const { stat } = entry;
    const rel = entry.relBytes.toString("hex");
    if (stat.isDirectory()) entries.push([rel, "dir"]);
    else if (stat.isSymbolicLink())
      entries.push([rel, `link ${readlinkSync(entry.at, "buffer").toString("hex")}`]);
    else if (stat.isFile())
      entries.push([rel, `file ${(stat.mode & 0o777).toString(8)} ${fileSha256(entry.at)}`]);
    else entries.push([rel, "other"]);
    return undefined;
  });
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [rel, what] of entries) hash.update(`${rel} ${what}\n`);
}
