// Hidden means the content, not the path (trust.md rule 13; docs/loop.md, "Hidden check assets"):
// a hidden asset is taken out of the task folder while the agents work, but a copy of its content
// elsewhere in the folder stays in their reach. Before a run, and in `scifi validate`, the task
// folder is searched for one: git objects (loose, and in pack indexes, by the blob id, SHA-1 and
// SHA-256 repositories alike; no git binary), Subversion pristine copies (named by their SHA-1),
// Mercurial store files of the asset's path, identical copies, and copies in a gzip file, a zip, a
// tar or a gzip'd tar. Each is an error that names the asset, where its content is and what to do.
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  type Dirent,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
} from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { crc32, gunzipSync } from "node:zlib";
import type { Diagnostic, SamDocument } from "./types.ts";

/** Files the search looks at at most; a bigger task folder is searched this far and says so. */
export const HIDDEN_SEARCH_MAX_ENTRIES = 500_000;
/** Git pack indexes, archives and candidate copies are read up to this size. */
const READ_MAX_BYTES = 512 * 1024 ** 2;

/** A hidden asset's fingerprints. */
interface Fingerprint {
  rel: string;
  size: number;
  sha256: string;
  crc32: number;
  /** Git blob ids (hex): SHA-1 and SHA-256, of the bytes and of the bytes with CRLF made LF. */
  blobs: Set<string>;
  sha1: string;
  /** The path as Mercurial's store names it (`data/<encoded>.i`). */
  hgStore: string;
}

/** Where a hidden asset's content was found. */
interface Found {
  asset: string;
  where: string;
  how: string;
}

/** Errors for every hidden asset whose content is reachable elsewhere in the task folder. */
export function hiddenContentDiagnostics(
  sam: SamDocument,
  display: string = sam.file,
  /** Entries searched at most (tests lower it); past it the task is refused. */
  maxEntries = HIDDEN_SEARCH_MAX_ENTRIES,
  /** The SAM's text when it is not on disk yet (a draft): its key's line is read from it. */
  text?: string,
): Diagnostic[] {
  const hidden = sam.metadata.hiddenAssets ?? [];
  if (hidden.length === 0) return [];
  const samDir = dirname(sam.file);
  const root = realpathSync(samDir);
  const prints = hidden.flatMap((asset) => fingerprint(root, resolve(samDir, asset)) ?? []);
  if (prints.length === 0) return [];
  const search = new Search(root, prints, maxEntries);
  search.walk(root);
  const line = keyLine(sam.file, text);
  const at = (severity: Diagnostic["severity"], message: string): Diagnostic => ({
    file: display,
    line,
    column: 1,
    severity,
    message,
  });
  const byAsset = new Map<string, Found[]>();
  for (const found of search.found) byAsset.set(found.asset, [...(byAsset.get(found.asset) ?? []), found]);
  const diagnostics = [...byAsset].map(([asset, found]) => at("error", message(asset, found)));
  if (search.truncated)
    diagnostics.push(
      // Unsearched is unknown: a copy past the cut would reach the agents, so the task is refused.
      at(
        "error",
        `the task folder has more than ${maxEntries} files, so the runner cannot tell that no copy of a hidden asset is among them: keep large data in a declared mount, outside the task folder`,
      ),
    );
  return diagnostics;
}

function message(asset: string, found: Found[]): string {
  const shown = found.slice(0, 3).map((f) => `${f.how} at ${f.where}`);
  const more = found.length > 3 ? ` (and ${found.length - 3} more)` : "";
  const vcs = found.some((f) => f.how.startsWith("in the"));
  const fix = vcs
    ? "run the task on a copy of the folder without its version-control history (e.g. `git archive` or a copy without .git), or remove the file from the history"
    : "remove the copies from the task folder, or keep them outside it";
  return `the hidden asset ${asset} can be read by the agents elsewhere in the task folder: ${shown.join("; ")}${more}. Hiding its path does not hide its content: ${fix}`;
}

/** The line of `hidden_assets:` in the SAM file (1 when it cannot be told). */
function keyLine(file: string, text?: string): number {
  try {
    const index = (text ?? readFileSync(file, "utf8"))
      .split("\n")
      .findIndex((l) => l.startsWith("hidden_assets:"));
    return index + 1 || 1;
  } catch {
    return 1;
  }
}

function fingerprint(root: string, absolute: string): Fingerprint | undefined {
  let real: string;
  let data: Buffer;
  try {
    real = realpathSync(absolute);
    data = readBounded(real, Number.MAX_SAFE_INTEGER);
  } catch {
    return undefined; // the parser reports a missing or unreadable asset
  }
  const rel = relative(root, real).split(sep).join("/");
  if (data.length === 0) return undefined; // an empty file hides nothing, and is everywhere
  const blobs = new Set<string>();
  const lf = Buffer.from(data.toString("latin1").replace(/\r\n/g, "\n"), "latin1");
  for (const content of [data, lf]) {
    for (const algorithm of ["sha1", "sha256"]) {
      const hash = createHash(algorithm).update(`blob ${content.length}\0`).update(content);
      blobs.add(hash.digest("hex"));
    }
  }
  return {
    rel,
    size: data.length,
    sha256: createHash("sha256").update(data).digest("hex"),
    crc32: crc32(data),
    blobs,
    sha1: createHash("sha1").update(data).digest("hex"),
    hgStore: `data/${hgEncode(rel)}`,
  };
}

/** Mercurial's store encoding of a path: capitals as `_x`, `_` as `__`, unsafe bytes as `~xx`. */
function hgEncode(rel: string): string {
  let out = "";
  for (const byte of Buffer.from(rel)) {
    const c = String.fromCharCode(byte);
    if (c === "_") out += "__";
    else if (c >= "A" && c <= "Z") out += `_${c.toLowerCase()}`;
    else if (byte < 0x20 || byte > 0x7e || '\\:*?"<>|'.includes(c))
      out += `~${byte.toString(16).padStart(2, "0")}`;
    else out += c;
  }
  return out;
}

/** A regular file's bytes, no link followed, no FIFO waited on (a folder an agent ran in is hostile). */
function readBounded(path: string, max = READ_MAX_BYTES): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${path} is not a regular file`);
    const size = stat.size;
    if (size > max) throw new Error(`${path} is larger than ${max} bytes`);
    const data = Buffer.alloc(size);
    let at = 0;
    while (at < size) {
      const n = readSync(fd, data, at, size - at, at);
      if (n === 0) break;
      at += n;
    }
    return data.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}

/** One search of a task folder: every regular file looked at once, no link followed. */
class Search {
  readonly found: Found[] = [];
  truncated = false;
  #entries = 0;
  readonly #hiddenRels: Set<string>;
  readonly #root: string;
  readonly #prints: Fingerprint[];
  readonly #maxEntries: number;

  constructor(root: string, prints: Fingerprint[], maxEntries: number) {
    this.#maxEntries = maxEntries;
    this.#root = root;
    this.#prints = prints;
    this.#hiddenRels = new Set(prints.map((p) => p.rel));
  }

  walk(dir: string): void {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (++this.#entries > this.#maxEntries) {
        this.truncated = true;
        return;
      }
      const path = join(dir, entry.name);
      if (entry.isDirectory()) this.walk(path);
      else if (entry.isFile()) this.#file(path, relative(this.#root, path).split(sep).join("/"));
    }
  }

  #add(print: Fingerprint, where: string, how: string): void {
    this.found.push({ asset: print.rel, where, how });
  }

  #file(path: string, rel: string): void {
    if (this.#hiddenRels.has(rel)) return;
    const name = basename(path);
    const parent = basename(dirname(path));
    if (/^[0-9a-f]{2}$/.test(parent) && /^(?:[0-9a-f]{38}|[0-9a-f]{62})$/.test(name)) {
      const id = parent + name;
      for (const p of this.#prints)
        if (p.blobs.has(id)) this.#add(p, rel, `in the git history as loose object ${id}`);
      return;
    }
    if (name.endsWith(".idx")) {
      this.#packIndex(path, rel);
      return;
    }
    if (name.endsWith(".pack") && !existsSync(path.replace(/\.pack$/, ".idx"))) {
      for (const p of this.#prints)
        this.#add(
          p,
          rel,
          "in the git history, possibly: a pack without its index (which the runner cannot check)",
        );
      return;
    }
    if (name.endsWith(".svn-base")) {
      for (const p of this.#prints)
        if (name.startsWith(p.sha1)) this.#add(p, rel, "in the Subversion pristine store");
    }
    const hg = rel.indexOf(".hg/store/");
    if (hg >= 0) {
      const stored = rel.slice(hg + ".hg/store/".length).replace(/\.[id]$/, "");
      for (const p of this.#prints) if (stored === p.hgStore) this.#add(p, rel, "in the Mercurial history");
    }
    this.#history(path, rel);
    this.#copies(path, rel);
  }

  /**
   * History kept outside `.git` under any name: a git bundle (a pack behind a short header, no
   * index) or a bare pack. Neither can be searched without unpacking, so either is refused.
   */
  #history(path: string, rel: string): void {
    let head: Buffer;
    try {
      if (lstatSync(path).size < 32) return;
      // No link followed, and a FIFO swapped in meanwhile does not block the read.
      const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      try {
        head = Buffer.alloc(16);
        readSync(fd, head, 0, 16, 0);
      } finally {
        closeSync(fd);
      }
    } catch {
      return;
    }
    const text = head.toString("latin1");
    const what = /^# v[23] git bundle\n/.test(text)
      ? "a git bundle (history the runner cannot search without unpacking it)"
      : text.startsWith("PACK\0\0\0") && !rel.includes(".git/objects/pack/")
        ? "a git pack outside .git (history the runner cannot search without its index)"
        : undefined;
    if (what) for (const p of this.#prints) this.#add(p, rel, `in the git history, possibly: ${what}`);
  }

  /** A git pack index (version 2, or the old version 1): the sorted object ids it lists. */
  #packIndex(path: string, rel: string): void {
    let data: Buffer;
    try {
      data = readBounded(path);
    } catch {
      return;
    }
    const v2 = data.readUInt32BE(0) === 0xff744f63 && data.readUInt32BE(4) === 2;
    const fanout = v2 ? 8 : 0;
    if (data.length < fanout + 1024) return;
    const count = data.readUInt32BE(fanout + 1020);
    for (const p of this.#prints) {
      for (const id of p.blobs) {
        const size = id.length / 2;
        const hit = v2 ? v2Entry(data, count, size, id) : v1Entry(data, count, id);
        if (hit) this.#add(p, rel, `in the git history (blob ${id})`);
      }
    }
  }

  /** An identical copy, or one in a gzip file, a zip, a tar or a gzip'd tar (by size and CRC-32, then bytes). */
  #copies(path: string, rel: string): void {
    let data: Buffer | undefined;
    const read = () => {
      data ??= readBounded(path);
      return data;
    };
    try {
      const size = lstatSync(path).size;
      for (const p of this.#prints) {
        if (size === p.size && createHash("sha256").update(read()).digest("hex") === p.sha256)
          this.#add(p, rel, "an identical copy");
      }
      if (/\.(?:gz|gzip|z)$/i.test(rel) && size >= 18) {
        const tail = read().subarray(-8);
        for (const p of this.#prints)
          if (tail.readUInt32LE(0) === p.crc32 && tail.readUInt32LE(4) === p.size % 2 ** 32)
            this.#add(p, rel, "a gzip copy");
      }
      if (/\.(?:zip|jar|whl|npz|docx|xlsx|odt|ods)$/i.test(rel)) this.#zip(read(), rel);
      if (/\.tar$/i.test(rel)) this.#tar(read(), rel);
      // A gzip'd tar: unpacked (bounded) and walked as a tar.
      if (/\.(?:tgz|tar\.gz)$/i.test(rel))
        this.#tar(gunzipSync(read(), { maxOutputLength: READ_MAX_BYTES }), rel);
    } catch {
      // Unreadable or too big to read: not a copy the search can tell.
    }
  }

  #zip(data: Buffer, rel: string): void {
    for (
      let at = data.indexOf("PK\x01\x02");
      at >= 0 && at + 46 <= data.length;
      at = data.indexOf("PK\x01\x02", at + 4)
    ) {
      const crc = data.readUInt32LE(at + 16);
      const size = data.readUInt32LE(at + 24);
      const name = data.toString("utf8", at + 46, at + 46 + data.readUInt16LE(at + 28));
      for (const p of this.#prints)
        if (crc === p.crc32 && size === p.size) this.#add(p, rel, `a copy in the zip member ${name}`);
    }
  }

  #tar(data: Buffer, rel: string): void {
    for (let at = 0; at + 512 <= data.length; ) {
      const size = Number.parseInt(
        data
          .toString("latin1", at + 124, at + 136)
          .replace(/\0.*$/s, "")
          .trim() || "0",
        8,
      );
      if (!Number.isFinite(size) || size < 0) return;
      const name = data.toString("utf8", at, at + 100).replace(/\0.*$/s, "");
      const body = data.subarray(at + 512, at + 512 + size);
      for (const p of this.#prints)
        if (size === p.size && createHash("sha256").update(body).digest("hex") === p.sha256)
          this.#add(p, rel, `a copy in the tar member ${name}`);
      at += 512 + Math.ceil(size / 512) * 512;
    }
  }
}

/** Index v2: magic, version, fanout, then `count` ids of `size` bytes, sorted. */
function v2Entry(data: Buffer, count: number, size: number, id: string): boolean {
  const table = 8 + 1024;
  // The id width must fit the file: ids, CRCs and offsets, then two trailing hashes.
  if (table + count * (size + 8) + 2 * size > data.length) return false;
  return sortedHas(data, count, (i) => table + i * size, size, id);
}

/** Index v1: fanout, then `count` entries of a 4-byte offset and a 20-byte id. */
function v1Entry(data: Buffer, count: number, id: string): boolean {
  if (id.length !== 40 || 1024 + count * 24 > data.length) return false;
  return sortedHas(data, count, (i) => 1024 + i * 24 + 4, 20, id);
}

function sortedHas(
  data: Buffer,
  count: number,
  offset: (i: number) => number,
  size: number,
  id: string,
): boolean {
  const want = Buffer.from(id, "hex");
  let low = 0;
  let high = count - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const at = offset(mid);
    const order = data.subarray(at, at + size).compare(want);
    if (order === 0) return true;
    if (order < 0) low = mid + 1;
    else high = mid - 1;
  }
  return false;
}
