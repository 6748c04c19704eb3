// Reading a task folder for an import, refusing what a copy could be led astray by: links,
// devices, FIFOs, files too large or too many, paths through links or out of the task.
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, sep } from "node:path";
import { HarborImportError } from "./harbor-config.ts";

const MAX_FILE_BYTES = 64 * 2 ** 20;
const MAX_FILES = 2_000;

/** Regular files under `dir` (relative paths, sorted); a link, device or FIFO is an error. */
export function listTree(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, prefix)).sort()) {
    const rel = prefix === "" ? name : `${prefix}/${name}`;
    const s = lstatSync(join(dir, rel));
    if (s.isDirectory()) out.push(...listTree(dir, rel));
    else if (s.isFile()) out.push(rel);
    else
      throw new HarborImportError(
        `${join(dir, rel)} is not a regular file or folder (a link?); refusing to import it`,
      );
    if (out.length > MAX_FILES) throw new HarborImportError(`${dir} holds more than ${MAX_FILES} files`);
  }
  return out;
}

/** Every entry under `dir` (relative, sorted), links and others included, never followed; at most `max`. */
export function listAll(
  dir: string,
  max = MAX_FILES,
  prefix = "",
): { rel: string; kind: "file" | "other" }[] {
  const out: { rel: string; kind: "file" | "other" }[] = [];
  for (const name of readdirSync(join(dir, prefix)).sort()) {
    if (out.length >= max) break;
    const rel = prefix === "" ? name : `${prefix}/${name}`;
    const s = lstatSync(join(dir, rel));
    if (s.isDirectory()) out.push(...listAll(dir, max - out.length, rel));
    else out.push({ rel, kind: s.isFile() ? "file" : "other" });
  }
  return out;
}

export function readBytes(file: string): Buffer {
  const s = lstatSync(file);
  if (!s.isFile()) throw new HarborImportError(`${file} is not a regular file; refusing to read it`);
  if (s.size > MAX_FILE_BYTES)
    throw new HarborImportError(`${file} is ${s.size} bytes, over ${MAX_FILE_BYTES}`);
  return readFileSync(file);
}

export const readText = (file: string): string => readBytes(file).toString("utf8");

export function write(root: string, rel: string, data: string | Buffer): void {
  const file = join(root, rel);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, data);
}

/**
 * Whether a folder between the task folder and `path` is a link (or `path` leaves the task folder):
 * a COPY through `environment/sub -> /elsewhere` would copy a file from outside the task.
 */
export function linkOnTheWay(taskDir: string, path: string): boolean {
  const rel = relative(taskDir, path);
  if (rel.startsWith("..") || isAbsolute(rel)) return true;
  let at = taskDir;
  for (const part of rel.split(sep).slice(0, -1)) {
    at = join(at, part);
    if (lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink() !== false) return true;
  }
  return false;
}
