// Outputs that hold other files (docs/loop.md, "Outputs that name another file"): gzip, zstd, zip and tar
// are opened here (bounded: a budget of inflated bytes for the whole output) so that what they hold
// is checked like an output of its own; an archive member that is a link, or whose name leaves the
// folder it is unpacked into (`../checks/ref.json` overwrites the reference when a grader unpacks
// it), is refused. Compressions the runner cannot open (bzip2, xz, 7z, rar, zip methods other
// than stored and deflate, zip64) are refused rather than passed unread; zstd is opened like gzip.
import { gunzipSync, inflateRawSync, zstdDecompressSync } from "node:zlib";

/** A file inside a container, checked in turn. */
export interface Member {
  name: string;
  data: Buffer;
}

/** What a container holds, or why it is refused. */
export type Unpacked =
  | { format: string; members: Member[] }
  | { format: string; refused: { what: string; reference: string } };

/** Inflated bytes one output may unpack into, all containers together. */
export class InflateBudget {
  left: number;
  constructor(bytes: number) {
    this.left = bytes;
  }
}

const UNREADABLE: [string, number[]][] = [
  ["bzip2", [0x42, 0x5a, 0x68]],
  ["xz", [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
  ["7z", [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]],
  ["rar", [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07]],
  ["lzip", [0x4c, 0x5a, 0x49, 0x50]],
];

/** The container `data` is, opened; undefined when it is none. */
export function unpack(data: Buffer, budget: InflateBudget): Unpacked | undefined {
  for (const [format, magic] of UNREADABLE) {
    if (magic.every((b, i) => data[i] === b))
      return refuse(format, `a ${format}-compressed file: the runner cannot look inside it`, "(not checked)");
  }
  if (data[0] === 0x1f && data[1] === 0x8b) return inflated("gzip", data, budget, gunzipSync);
  if (data.length >= 4 && data.readUInt32LE(0) === 0xfd2fb528)
    return inflated("zstd", data, budget, zstdDecompressSync);
  if (isTar(data)) return untar(data);
  const end = zipEnd(data);
  if (end >= 0) return unzip(data, end, budget);
  return undefined;
}

/** A tar header: "ustar" at 257, or (old v7 archives, which tar readers still take) a right checksum. */
function isTar(data: Buffer): boolean {
  if (data.length < 512) return false;
  if (data.toString("latin1", 257, 262) === "ustar") return true;
  const stored = Number.parseInt(data.toString("latin1", 148, 156).replace(/\0.*$/s, "").trim(), 8);
  if (!Number.isFinite(stored) || data[0] === 0) return false;
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : (data[i] ?? 0);
  return sum === stored;
}

function refuse(format: string, what: string, reference: string): Unpacked {
  return { format, refused: { what, reference } };
}

function inflated(
  format: string,
  data: Buffer,
  budget: InflateBudget,
  inflate: (data: Buffer, options: { maxOutputLength: number }) => Buffer,
): Unpacked {
  try {
    const inner = inflate(data, { maxOutputLength: Math.max(1, budget.left) });
    budget.left -= inner.length;
    return { format, members: [{ name: "(its content)", data: inner }] };
  } catch (error) {
    return refuse(
      format,
      `a ${format} file that does not unpack within the runner's limit (${messageOf(error)})`,
      "(not checked)",
    );
  }
}

/** A member name a grader could unpack outside its folder: absolute, a `..` part, a drive or a backslash. */
function escapes(name: string): boolean {
  return (
    name.startsWith("/") || name.includes("\\") || /^[A-Za-z]:/.test(name) || name.split("/").includes("..")
  );
}

function untar(data: Buffer): Unpacked {
  const members: Member[] = [];
  let longName: string | undefined;
  let pax: Map<string, string> | undefined;
  for (let at = 0; at + 512 <= data.length; ) {
    const header = data.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const size = Number.parseInt(field(header, 124, 12).trim() || "0", 8);
    if (!Number.isFinite(size) || size < 0)
      return refuse("tar", "a tar member with an unreadable size", "(not checked)");
    const body = data.subarray(at + 512, at + 512 + size);
    const type = String.fromCharCode(header[156] ?? 0);
    at += 512 + Math.ceil(size / 512) * 512;
    if (type === "L") {
      longName = cText(body);
      continue;
    }
    if (type === "x") {
      pax = paxRecords(body);
      continue;
    }
    if (type === "g" || type === "K") {
      if (type === "K") return refuse("tar", "a tar member with a long link target (a link)", cText(body));
      continue;
    }
    const prefix = field(header, 345, 155);
    const name = pax?.get("path") ?? longName ?? (prefix ? `${prefix}/` : "") + field(header, 0, 100);
    const link = pax?.get("linkpath") ?? field(header, 157, 100);
    longName = undefined;
    pax = undefined;
    if (type === "1" || type === "2")
      return refuse("tar", `a tar member ${name} that is a ${type === "1" ? "hard" : "symbolic"} link`, link);
    if (escapes(name))
      return refuse("tar", "a tar member whose name leaves the folder it is unpacked into", name);
    if (type === "0" || type === "\0" || type === "7") members.push({ name, data: body });
    else if (type !== "5")
      return refuse("tar", `a tar member ${name} of type '${type}' (not a file or folder)`, name);
  }
  return { format: "tar", members };
}

function field(header: Buffer, at: number, size: number): string {
  return cText(header.subarray(at, at + size));
}

function cText(bytes: Buffer): string {
  const end = bytes.indexOf(0);
  return bytes.toString("utf8", 0, end < 0 ? bytes.length : end);
}

/** pax extended header records: "LEN key=value\n". */
function paxRecords(body: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  for (const line of body.toString("utf8").split("\n")) {
    const match = /^\d+ ([^=]+)=(.*)$/s.exec(line);
    if (match?.[1] && match[2] !== undefined) records.set(match[1], match[2]);
  }
  return records;
}

/** The end-of-central-directory record (readers find a zip by its end, whatever comes first), or -1. */
function zipEnd(data: Buffer): number {
  const from = Math.max(0, data.length - 22 - 0xffff);
  for (let at = data.length - 22; at >= from; at--) {
    if (data.readUInt32LE(at) === 0x06054b50) return at;
  }
  return -1;
}

function unzip(data: Buffer, end: number, budget: InflateBudget): Unpacked {
  const count = data.readUInt16LE(end + 10);
  let at = data.readUInt32LE(end + 16);
  if (at === 0xffffffff || count === 0xffff)
    return refuse("zip", "a zip64 archive: the runner does not read it", "(not checked)");
  const members: Member[] = [];
  for (let i = 0; i < count; i++) {
    if (at + 46 > data.length || data.readUInt32LE(at) !== 0x02014b50)
      return refuse("zip", "a zip archive whose central directory the runner cannot read", "(not checked)");
    const method = data.readUInt16LE(at + 10);
    const packed = data.readUInt32LE(at + 20);
    const size = data.readUInt32LE(at + 24);
    const nameLength = data.readUInt16LE(at + 28);
    const extra = data.readUInt16LE(at + 30) + data.readUInt16LE(at + 32);
    const mode = data.readUInt32LE(at + 38) >>> 16;
    const local = data.readUInt32LE(at + 42);
    const name = data.toString("utf8", at + 46, at + 46 + nameLength);
    at += 46 + nameLength + extra;
    if ((mode & 0o170000) === 0o120000)
      return refuse("zip", `a zip member ${name} that is a symbolic link`, name);
    if (escapes(name))
      return refuse("zip", "a zip member whose name leaves the folder it is unpacked into", name);
    if (name.endsWith("/")) continue;
    const member = zipMember(data, { method, packed, size, local, name }, budget);
    if ("refused" in member) return refuse("zip", member.refused, name);
    members.push(member);
  }
  return { format: "zip", members };
}

function zipMember(
  data: Buffer,
  entry: { method: number; packed: number; size: number; local: number; name: string },
  budget: InflateBudget,
): Member | { refused: string } {
  const { method, packed, size, local, name } = entry;
  if (packed === 0xffffffff || size === 0xffffffff || local === 0xffffffff)
    return { refused: `a zip64 member ${name}: the runner does not read it` };
  if (local + 30 > data.length || data.readUInt32LE(local) !== 0x04034b50)
    return { refused: `a zip member ${name} the runner cannot find` };
  const start = local + 30 + data.readUInt16LE(local + 26) + data.readUInt16LE(local + 28);
  const raw = data.subarray(start, start + packed);
  if (method === 0) return { name, data: raw };
  if (method !== 8)
    return { refused: `a zip member ${name} compressed with method ${method}, which the runner cannot open` };
  try {
    const inner = inflateRawSync(raw, { maxOutputLength: Math.max(1, budget.left) });
    budget.left -= inner.length;
    return { name, data: inner };
  } catch (error) {
    return {
      refused: `a zip member ${name} that does not unpack within the runner's limit (${messageOf(error)})`,
    };
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
