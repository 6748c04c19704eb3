// HDF5 (and NetCDF-4, which is HDF5) outputs that name another file (docs/loop.md, "Outputs that
// name another file"). The library follows three structures to another file: an external link (a
// link message of type 64: file name and object path), a virtual dataset (a layout message of
// version 4, class 3, whose mappings in a global heap name the source files) and external raw
// storage (an external file list message, its names in a local heap). They are found by a byte scan
// for their encodings (no HDF5 library, no walk of the object tree a hostile file could loop), which
// finds them in version 1 and 2 object headers and in a group's dense link storage alike; a hostile
// file gains nothing from a false match (it is refused). Dense link storage whose heap is filtered
// (compressed) cannot be scanned, so it is refused rather than decoded.

const SIGNATURE = Buffer.from([0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a]);

/** What an HDF5 file names outside itself: the structure and the file it names. */
export interface Hdf5Reference {
  what: string;
  reference: string;
}

/** Where the HDF5 superblock starts (0, 512, 1024, 2048 ... as the library looks), or -1. */
export function hdf5Offset(data: Buffer): number {
  for (let at = 0; at + SIGNATURE.length <= data.length; at = at === 0 ? 512 : at * 2) {
    if (data.subarray(at, at + SIGNATURE.length).equals(SIGNATURE)) return at;
  }
  return -1;
}

interface Layout {
  base: number;
  addr: number;
  len: number;
}

/** The first structure of an HDF5 file that names another file, or undefined when none does. */
export function hdf5Reference(data: Buffer, at: number): Hdf5Reference | undefined {
  const layout = superblock(data, at);
  if (typeof layout === "string") return { what: layout, reference: "(not checked)" };
  return (
    externalLink(data) ?? externalFiles(data, layout) ?? virtualDataset(data, layout) ?? filteredLinks(data)
  );
}

function superblock(data: Buffer, at: number): Layout | string {
  const version = data[at + 8];
  const sizes =
    version === 0 || version === 1
      ? [data[at + 13], data[at + 14], at + (version === 0 ? 24 : 28)]
      : version === 2 || version === 3
        ? [data[at + 9], data[at + 10], at + 12]
        : undefined;
  const [addr, len, baseAt] = sizes ?? [];
  if (
    addr === undefined ||
    len === undefined ||
    baseAt === undefined ||
    ![2, 4, 8].includes(addr) ||
    ![2, 4, 8].includes(len)
  )
    return `an HDF5 superblock the runner cannot read (version ${version}), so its links were not checked`;
  return { base: Number(uint(data, baseAt, addr) ?? 0), addr, len };
}

/** Little-endian unsigned integer of `size` bytes at `at`, or undefined past the end. */
function uint(data: Buffer, at: number, size: number): number | undefined {
  if (at < 0 || at + size > data.length) return undefined;
  let value = 0;
  for (let i = size - 1; i >= 0; i--) value = value * 256 + (data[at + i] ?? 0);
  return value;
}

/** A link message: version 1, flags with "link type present", link type 64 (external). */
function externalLink(data: Buffer): Hdf5Reference | undefined {
  for (let k = data.indexOf(0x40, 2); k >= 0; k = data.indexOf(0x40, k + 1)) {
    const flags = data[k - 1] ?? 0;
    if (data[k - 2] !== 1 || (flags & 0xe8) !== 0x08) continue;
    let p = k + 1 + (flags & 0x04 ? 8 : 0) + (flags & 0x10 ? 1 : 0);
    const nameSize = 1 << (flags & 0x03);
    const nameLength = uint(data, p, nameSize);
    if (!nameLength) continue;
    p += nameSize + nameLength;
    const infoLength = uint(data, p, 2);
    if (infoLength === undefined || infoLength < 3 || p + 2 + infoLength > data.length) continue;
    const info = data.subarray(p + 2, p + 2 + infoLength);
    // Version 0 flags 0, then the file name and the object path, each ending in a NUL. The library
    // reads the two names up to their NULs and ignores any bytes after them, so this does too.
    const fileEnd = nameEnd(info, 1);
    const pathEnd = fileEnd > 1 ? nameEnd(info, fileEnd + 1) : -1;
    if (info[0] !== 0 || pathEnd <= fileEnd + 1) continue;
    return {
      what: `an HDF5 external link (to object ${printable(info.subarray(fileEnd + 1, pathEnd))})`,
      reference: printable(info.subarray(1, fileEnd)),
    };
  }
  return undefined;
}

/**
 * Where a name starting at `at` ends (its NUL), or -1 when a control byte comes first: a file name or
 * an object path has none, which keeps random data from passing for a link.
 */
function nameEnd(bytes: Buffer, at: number): number {
  for (let i = at; i < bytes.length; i++) {
    const b = bytes[i] ?? 0;
    if (b === 0) return i;
    if (b < 0x20 || b === 0x7f) return -1;
  }
  return -1;
}

/**
 * The message bodies of a given message type, found by their headers: a version 1 header (type as 2
 * bytes, size, flags, 3 reserved zero bytes) or a version 2 one (type as 1 byte, size, flags,
 * creation order when flag 0x04... only in headers that track it, so both widths are tried).
 */
function* messageBodies(data: Buffer, type: number, fits: (size: number, at: number) => boolean) {
  for (let i = data.indexOf(type); i >= 0; i = data.indexOf(type, i + 1)) {
    const v1Size = uint(data, i + 2, 2);
    if (data[i + 1] === 0 && v1Size !== undefined && uint(data, i + 5, 3) === 0 && fits(v1Size, i + 8))
      yield i + 8;
    const v2Size = uint(data, i + 1, 2);
    if (v2Size === undefined) continue;
    if (fits(v2Size, i + 4)) yield i + 4;
    if (fits(v2Size, i + 6)) yield i + 6;
  }
}

/** External raw storage: an external file list message (type 7) and the names in its local heap. */
function externalFiles(data: Buffer, layout: Layout): Hdf5Reference | undefined {
  const { addr, len } = layout;
  const slotsFit = (size: number, at: number) => {
    const allocated = uint(data, at + 4, 2) ?? 0;
    const used = uint(data, at + 6, 2) ?? 0;
    const need = 8 + addr + allocated * 3 * len;
    return uint(data, at, 4) === 1 && used >= 1 && used <= allocated && size >= need && size < need + 8;
  };
  for (const body of messageBodies(data, 0x07, slotsFit)) {
    const heap = (uint(data, body + 8, addr) ?? 0) + layout.base;
    const nameOffset = uint(data, body + 8 + addr, len) ?? 0;
    return {
      what: "HDF5 external raw storage (an external file list)",
      reference: localHeapString(data, heap, nameOffset, layout) ?? "(a name in its local heap)",
    };
  }
  return undefined;
}

function localHeapString(data: Buffer, heap: number, offset: number, layout: Layout): string | undefined {
  if (data.toString("latin1", heap, heap + 4) !== "HEAP") return undefined;
  const segment = uint(data, heap + 8 + 2 * layout.len, layout.addr);
  if (segment === undefined) return undefined;
  return cString(data, segment + layout.base + offset);
}

/** A virtual dataset: a layout message of version 4, class 3; its mappings name the source files. */
function virtualDataset(data: Buffer, layout: Layout): Hdf5Reference | undefined {
  const need = 2 + layout.addr + 4;
  const isVirtual = (size: number, at: number) =>
    data[at] === 4 && data[at + 1] === 3 && size >= need && size < need + 8;
  for (const body of messageBodies(data, 0x08, isVirtual)) {
    const collection = (uint(data, body + 2, layout.addr) ?? 0) + layout.base;
    return {
      what: "an HDF5 virtual dataset",
      reference: firstName(data, collection) ?? "(a source file named in its global heap)",
    };
  }
  return undefined;
}

/** The first NUL-ended name of at least two printable characters in a global heap collection. */
function firstName(data: Buffer, collection: number): string | undefined {
  if (data.toString("latin1", collection, collection + 4) !== "GCOL") return undefined;
  const end = Math.min(data.length, collection + 4096);
  for (let at = collection + 8; at < end; at++) {
    const name = cString(data, at);
    if (name !== undefined && name.length >= 2) return name;
  }
  return undefined;
}

/** Dense link storage whose fractal heap has I/O filters: its link messages are compressed. */
function filteredLinks(data: Buffer): Hdf5Reference | undefined {
  for (let i = data.indexOf("FRHP"); i >= 0; i = data.indexOf("FRHP", i + 1)) {
    if (data[i + 4] === 0 && (uint(data, i + 7, 2) ?? 0) > 0)
      return {
        what: "an HDF5 group whose links are stored compressed (a filtered fractal heap), so they could not be checked",
        reference: "(unknown)",
      };
  }
  return undefined;
}

/** A NUL-ended run of printable ASCII at `at`, or undefined. */
function cString(data: Buffer, at: number): string | undefined {
  const end = data.indexOf(0, at);
  if (at < 0 || end <= at || end - at > 4096) return undefined;
  const bytes = data.subarray(at, end);
  return bytes.every((b) => b >= 0x20 && b < 0x7f) ? bytes.toString("latin1") : undefined;
}

/** Bytes as text a person can read: non-printable bytes as \xNN. */
export function printable(bytes: Buffer): string {
  let out = "";
  for (const b of bytes)
    out += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, "0")}`;
  return out.length > 200 ? `${out.slice(0, 200)}...` : out;
}
