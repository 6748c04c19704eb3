// Parquet outputs that name another file (docs/loop.md, "Outputs that name another file"): a column
// chunk's `file_path` (ColumnChunk field 1 in the footer's FileMetaData) says its data is in another
// file. The footer is Thrift's compact protocol; it is walked here (bounded depth, every length
// checked) only far enough to read row_groups (field 4) -> columns (field 1) -> file_path (field 1).
// An encrypted footer (`PARE`) or one that does not parse is refused rather than passed unread.

/** What a Parquet file names outside itself, or why it could not be read. */
export interface ParquetReference {
  what: string;
  reference: string;
}

/** True when the bytes are a Parquet file (magic at both ends). */
export function isParquet(data: Buffer): boolean {
  const tail = data.toString("latin1", data.length - 4);
  return (
    data.length >= 12 && data.toString("latin1", 0, 4) === "PAR1" && (tail === "PAR1" || tail === "PARE")
  );
}

export function parquetReference(data: Buffer): ParquetReference | undefined {
  if (data.toString("latin1", data.length - 4) === "PARE")
    return { what: "an encrypted footer, which the runner cannot read", reference: "(not checked)" };
  const length = data.readUInt32LE(data.length - 8);
  const start = data.length - 8 - length;
  if (start < 4) return { what: "a footer the runner cannot read", reference: "(not checked)" };
  const reader = new Compact(data.subarray(start, data.length - 8));
  try {
    const found = reader.struct(0, fileMetaData);
    return found === undefined
      ? undefined
      : { what: "a column chunk stored in another file (file_path)", reference: found };
  } catch (error) {
    return {
      what: `a footer the runner cannot read (${error instanceof Error ? error.message : String(error)})`,
      reference: "(not checked)",
    };
  }
}

/** What to do with a field of a struct: look into it (a struct, or a list of structs), read it, or skip it. */
type Visit = (field: number) => Visit | "read" | undefined;

// FileMetaData.row_groups (4): list<RowGroup>; RowGroup.columns (1): list<ColumnChunk>; ColumnChunk.file_path (1).
const columnChunk: Visit = (field) => (field === 1 ? "read" : undefined);
const rowGroup: Visit = (field) => (field === 1 ? columnChunk : undefined);
const fileMetaData: Visit = (field) => (field === 4 ? rowGroup : undefined);

const MAX_DEPTH = 32;

/** A reader of Thrift's compact protocol over a bounded buffer; throws on anything malformed. */
class Compact {
  #at = 0;
  readonly #data: Buffer;
  constructor(data: Buffer) {
    this.#data = data;
  }

  #byte(): number {
    const b = this.#data[this.#at++];
    if (b === undefined) throw new Error("footer ends early");
    return b;
  }

  #varint(): number {
    let value = 0;
    for (let shift = 0; shift < 64; shift += 7) {
      const b = this.#byte();
      if (shift < 53) value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
    }
    throw new Error("a varint longer than 10 bytes");
  }

  #skipBytes(n: number): void {
    if (n < 0 || this.#at + n > this.#data.length) throw new Error("a length past the footer's end");
    this.#at += n;
  }

  /** A struct's fields; returns the first file_path found under `visit`. */
  struct(depth: number, visit: Visit | undefined): string | undefined {
    if (depth > MAX_DEPTH) throw new Error("structures nested too deep");
    let field = 0;
    for (;;) {
      const header = this.#byte();
      const type = header & 0x0f;
      if (type === 0) return undefined;
      const delta = header >> 4;
      field = delta === 0 ? zigzag(this.#varint()) : field + delta;
      const found = this.#value(type, depth, visit?.(field));
      if (found !== undefined) return found;
    }
  }

  #value(type: number, depth: number, visit: Visit | "read" | undefined): string | undefined {
    switch (type) {
      case 1:
      case 2:
        return undefined;
      case 3:
        this.#skipBytes(1);
        return undefined;
      case 4:
      case 5:
      case 6:
        this.#varint();
        return undefined;
      case 7:
        this.#skipBytes(8);
        return undefined;
      case 8: {
        const length = this.#varint();
        const at = this.#at;
        this.#skipBytes(length);
        return visit === "read" ? this.#data.toString("utf8", at, at + length) : undefined;
      }
      case 9:
      case 10:
        return this.#list(depth, visit === "read" ? undefined : visit);
      case 11:
        return this.#map(depth);
      case 12:
        return this.struct(depth + 1, visit === "read" ? undefined : visit);
      default:
        throw new Error(`an unknown field type ${type}`);
    }
  }

  #list(depth: number, visit: Visit | undefined): string | undefined {
    const header = this.#byte();
    const size = header >> 4 === 15 ? this.#varint() : header >> 4;
    const type = header & 0x0f;
    for (let i = 0; i < size; i++) {
      // A boolean in a list is a byte of its own.
      if (type === 1 || type === 2) {
        this.#skipBytes(1);
        continue;
      }
      const found = this.#value(type, depth + 1, visit);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  #map(depth: number): undefined {
    const size = this.#varint();
    if (size === 0) return undefined;
    const types = this.#byte();
    for (let i = 0; i < size; i++) {
      for (const type of [types >> 4, types & 0x0f]) {
        if (type === 1 || type === 2) this.#skipBytes(1);
        else this.#value(type, depth + 1, undefined);
      }
    }
    return undefined;
  }
}

function zigzag(n: number): number {
  return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
}
