// Outputs whose format can name another file (docs/loop.md, "Outputs that name another file"). A
// compare stage runs where the hidden check assets are; an output that a grader's library resolves
// to another file (an HDF5 external link, an XML external entity, an archive member that is a link)
// would have the grader read the reference as the agent's result. Each declared output is looked at
// here, as bytes, when it is copied out; one that names another file, or that the runner cannot
// look inside, is refused, naming the output and the reference. Pure, bounded, no parsing library.
import { InflateBudget, unpack } from "./output-containers.ts";
import { hdf5Offset, hdf5Reference, printable } from "./output-hdf5.ts";
import { isParquet, parquetReference } from "./output-parquet.ts";
import { isCallingPickle, PICKLE_NAME } from "./output-pickle.ts";

/** What an output names outside itself. */
export interface FormatFinding {
  /** The format, e.g. `HDF5`, `XML`, `zip`. */
  format: string;
  /** The structure, e.g. "an HDF5 external link". */
  what: string;
  /** The file it names, as written (or why none can be told). */
  reference: string;
  /** Where inside the output (an archive member), when not at its top. */
  inside?: string;
}

export interface OutputFormatOptions {
  /**
   * File names the output must not contain (the hidden assets' task-folder paths and base names):
   * a format this module does not know still cannot name them.
   */
  hiddenNames?: readonly string[];
  /** Bytes all containers of the output may inflate to (default 256 MiB). */
  inflateBytes?: number;
}

/** Containers inside containers are opened this deep; deeper ones are refused. */
const MAX_DEPTH = 4;
/** Bytes all containers of one output may inflate to. */
const INFLATE_BYTES = 256 * 1024 ** 2;

/**
 * Why the output `rel` (its bytes `data`) is refused, as one line for the check's output, or
 * undefined when it names no other file.
 */
export function outputFormatProblem(
  rel: string,
  data: Buffer,
  options: OutputFormatOptions = {},
): string | undefined {
  const found =
    pickleByName(rel) ??
    findReference(data, options, new InflateBudget(options.inflateBytes ?? INFLATE_BYTES), 0);
  if (!found) return undefined;
  const where = found.inside ? ` (in ${found.inside})` : "";
  return `declared output ${rel} is refused: it is ${found.format}${where} holding ${found.what}, naming ${found.reference}; an output whose format can name another file could have the compare stage read a hidden check asset as the result. Write the data itself into the output (no links, external entities, includes or references to other files)`;
}

/** The first reference to another file in `data`, looking into containers; undefined: none. */
export function findReference(
  data: Buffer,
  options: OutputFormatOptions,
  budget: InflateBudget,
  depth: number,
): FormatFinding | undefined {
  const at = hdf5Offset(data);
  if (at >= 0) {
    const found = hdf5Reference(data, at);
    if (found) return { format: "HDF5 (or NetCDF-4)", ...found };
  }
  const container = unpack(data, budget);
  if (container && "refused" in container) return { format: container.format, ...container.refused };
  if (container) {
    if (depth >= MAX_DEPTH)
      return {
        format: container.format,
        what: `containers nested deeper than ${MAX_DEPTH}`,
        reference: "(not checked)",
      };
    for (const member of container.members) {
      const inner = pickleByName(member.name) ?? findReference(member.data, options, budget, depth + 1);
      if (inner)
        return {
          ...inner,
          inside: [`${container.format} member ${member.name}`, inner.inside].filter(Boolean).join(", "),
        };
    }
  }
  // The whole file too, whatever it also is (an XML with a zip appended is both). Last, the names
  // themselves: a format this module does not know still cannot name them.
  return binaryReference(data) ?? textReference(data) ?? hiddenName(data, options.hiddenNames ?? []);
}

/**
 * A file named as a pickle is loaded as one by the grader's library whatever its bytes (pandas and
 * joblib also decompress it first), so the name alone refuses it.
 */
function pickleByName(name: string): FormatFinding | undefined {
  if (!PICKLE_NAME.test(name)) return undefined;
  return {
    format: "a Python pickle (by its name)",
    what: "a name a grader loads as a pickle (pandas.read_pickle, joblib.load), which runs code when loaded",
    reference: "(any file)",
  };
}

/** A hidden asset's name, anywhere in the bytes (also as UTF-16, as XML may be written). */
function hiddenName(data: Buffer, names: readonly string[]): FormatFinding | undefined {
  for (const name of names) {
    if (name.length < 3) continue;
    const utf16 = Buffer.from(name, "utf16le");
    if (data.includes(name) || data.includes(utf16) || data.includes(Buffer.from(utf16).swap16()))
      return { format: "a file", what: "the name of a hidden check asset", reference: name };
  }
  return undefined;
}

/** Binary formats that can run code in a reader or name a file: pickle, NumPy objects, SQLite, FITS, Parquet, ROOT. */
function binaryReference(data: Buffer): FormatFinding | undefined {
  if (data[0] === 0x80 && (data[1] ?? 0) >= 2 && (data[1] ?? 0) <= 5)
    return {
      format: "a Python pickle",
      what: "code a reader runs when it loads it",
      reference: "(any file)",
    };
  // Protocols 0 and 1 have no header: the opcodes themselves (output-pickle.ts).
  if (isCallingPickle(data))
    return {
      format: "a Python pickle (protocol 0 or 1, no header)",
      what: "code a reader runs when it loads it (it imports or calls)",
      reference: "(any file)",
    };
  if (data.toString("latin1", 0, 6) === "\x93NUMPY") {
    const header = data.toString("latin1", 8, Math.min(data.length, 8 + 65536));
    // An object field anywhere in the dtype (a structured dtype lists its fields: ('o', 'O')).
    if (/'descr'\s*:/.test(header) && /['"][|<>=]?O\d*['"]/.test(header))
      return {
        format: "a NumPy .npy file",
        what: "object arrays (a pickle a reader runs when it loads it)",
        reference: "(any file)",
      };
  }
  if (data.toString("latin1", 0, 16) === "SQLite format 3\0") {
    const fn = /\b(readfile|writefile|fsdir|zipfile|load_extension)\s*\(/i.exec(data.toString("latin1"));
    if (fn)
      return {
        format: "an SQLite database",
        what: `SQL calling ${fn[1]}() (a view or trigger the sqlite3 shell answers by reading a file)`,
        reference: "(a file it reads)",
      };
  }
  if (data.toString("latin1", 0, 9) === "SIMPLE  =") {
    const card = /(MEMBER_LOCATION|MEMBER_URI_TYPE|GRPLC\d*)/.exec(data.toString("latin1"));
    if (card)
      return {
        format: "a FITS file",
        what: `a grouping table naming member files (${card[1]})`,
        reference: "(its member locations)",
      };
  }
  if (isParquet(data)) {
    const found = parquetReference(data);
    if (found) return { format: "a Parquet file", ...found };
  }
  if (data.toString("latin1", 0, 4) === "root") {
    const cls = /(TChain|TFriendElement|TFileCollection|TChainElement)/.exec(data.toString("latin1"));
    if (cls)
      return {
        format: "a ROOT file",
        what: `a ${cls[1]} (it opens other files)`,
        reference: "(the files it lists)",
      };
  }
  return undefined;
}

/**
 * The texts a reader may decode the bytes as: UTF-8 always (read as Latin-1: every pattern here is
 * ASCII, which UTF-8 keeps as it is, and Latin-1 decodes 64 MiB of binary in a tenth of the time),
 * UTF-16 too where a byte order mark or a
 * `<` with a zero byte beside it says so. UTF-32 and EBCDIC (which XML parsers read) are not
 * decoded: their name is returned instead, and the output is refused unread.
 */
function asTexts(data: Buffer): string[] | string {
  const [a, b, c, d] = data.subarray(0, 4);
  const utf32 =
    (a === 0 && b === 0 && ((c === 0xfe && d === 0xff) || (c === 0 && d === 0x3c))) ||
    (c === 0 && d === 0 && ((a === 0xff && b === 0xfe) || (a === 0x3c && b === 0)));
  if (utf32) return "UTF-32";
  if (a === 0x4c && b === 0x6f && c === 0xa7 && d === 0x94) return "EBCDIC";
  const texts = [data.toString("latin1")];
  // An XML declaration naming any other encoding (UTF-7 writes a DOCTYPE as base64): not decoded here.
  const declared = XML_ENCODING.exec((texts[0] as string).slice(0, 200))?.[1];
  if (declared && !READ_ENCODINGS.test(declared)) return declared;
  if ((a === 0xfe && b === 0xff) || (a === 0 && b === 0x3c))
    texts.push(
      Buffer.from(data.subarray(0, data.length & ~1))
        .swap16()
        .toString("utf16le"),
    );
  if ((a === 0xff && b === 0xfe) || (a === 0x3c && b === 0)) texts.push(data.toString("utf16le"));
  return texts;
}

/** An XML declaration's encoding, read from the start of the bytes. */
const XML_ENCODING = /^(?:\uFEFF|\xEF\xBB\xBF)?\s*<\?xml\b[^>]*?\bencoding\s*=\s*["']([^"']*)["']/;
/** The encodings the runner reads as it reads the bytes: anything else is refused unread. */
const READ_ENCODINGS = /^(?:utf-?8|utf-?16(?:le|be)?|us-ascii|ascii|iso-8859-1|latin-?1)$/i;

/** A text rule: a pattern, the format it belongs to and what it means. */
interface TextRule {
  format: string;
  what: string;
  pattern: RegExp;
}

const TEXT_RULES: TextRule[] = [
  { format: "XML", what: "a DOCTYPE that declares entities", pattern: /<!ENTITY\b[^>]*/i },
  {
    format: "XML",
    what: "a DOCTYPE with an external DTD",
    pattern: /<!DOCTYPE\s[^>[]*\b(?:SYSTEM|PUBLIC)\b[^>[]*/i,
  },
  {
    format: "XML",
    what: "an XInclude",
    // Any XInclude namespace (2001, the older 2003 one, whatever year), or a prefixed include.
    pattern: /(?:\/XInclude\b|<\w+:include\b)[^>]*/i,
  },
  { format: "XML", what: "a stylesheet processing instruction", pattern: /<\?xml-stylesheet\b[^>]*/i },
  {
    format: "XDMF",
    what: "a DataItem stored in another file",
    pattern: /<DataItem\b[^>]*\bFormat\s*=\s*["'](?:HDF|Binary|TIFF)["'][^<]*/i,
  },
  { format: "GDAL VRT", what: "a source file", pattern: /<(?:SourceFilename|SrcDataSource)\b[^<]*/i },
  {
    format: "LaTeX",
    what: "a command that reads another file",
    pattern:
      /\\(?:input|include|includegraphics|includepdf|includesvg|verbatiminput|VerbatimInput|lstinputlisting|inputminted|import|subimport|openin|bibliography|addbibresource|externaldocument|InputIfFileExists|IfFileExists|@@input|csname|read)\b[^\n]{0,200}/,
  },
  {
    format: "YAML",
    what: "a tag that includes a file or builds objects",
    // Short tags, verbatim tags (`!<tag:yaml.org,2002:python/...>`) and %TAG directives alike.
    pattern:
      /!(?:(?:include|import)\b|!python\/|!js\/|!ruby\/)[^\n]{0,200}|!<[^>\n]*(?:python|js|ruby)\/[^\n]{0,200}|^%TAG\b[^\n]{0,200}/m,
  },
  {
    format: "JSON-LD",
    what: "a context loaded from elsewhere",
    pattern: /"@(?:context"\s*:\s*(?:"|\[\s*")|import")[^\n]{0,200}/,
  },
  // Any other format that names a file by URL (a kerchunk/fsspec reference file, a manifest).
  { format: "text", what: "a file: URL", pattern: /\bfile:\/[^\s"'<>)]{0,200}/i },
];

/** Attributes of a tag that make a reader open a file (leavesFolder says which values are refused). */
const REFERENCE_ATTRIBUTE =
  /<[A-Za-z][^<>]*?\s(?:href|src|xlink:href|file|FileName|location|data|url)\s*=\s*(["'])([^"']*)\1/gi;
const CSS_URL = /url\(\s*(["']?)([^"')]*)\1\s*\)/gi;

function textReference(data: Buffer): FormatFinding | undefined {
  const texts = asTexts(data);
  if (typeof texts === "string")
    return {
      format: `${texts} text`,
      what: "an encoding the runner does not read (an XML parser may)",
      reference: "(not checked)",
    };
  for (const text of texts) {
    // A parser expands character references first (an XInclude namespace written `X&#73;nclude`).
    const found =
      inText(text) ?? (CHARACTER_REFERENCE.test(text) ? inText(expandReferences(text)) : undefined);
    if (found) return found;
  }
  return undefined;
}

function inText(text: string): FormatFinding | undefined {
  for (const rule of TEXT_RULES) {
    const match = rule.pattern.exec(text);
    if (match) return { format: rule.format, what: rule.what, reference: quoted(match[0]) };
  }
  for (const pattern of [REFERENCE_ATTRIBUTE, CSS_URL]) {
    for (const match of text.matchAll(pattern)) {
      const value = match[2] ?? "";
      if (leavesFolder(value))
        return {
          format: "XML, SVG or HTML",
          what: "a reference to a file outside the output's folder",
          reference: quoted(match[0]),
        };
    }
  }
  return undefined;
}

/** An XML numeric character reference (the `;` is required by XML; HTML's looser ones are undone in leavesFolder). */
const CHARACTER_REFERENCE = /&#(?:x[0-9a-f]{1,6}|\d{1,7});/i;

/** Numeric character references, expanded. */
function expandReferences(text: string): string {
  return text
    .replace(/&#x([0-9a-f]+);?/gi, (_, hex: string) =>
      String.fromCodePoint(Number.parseInt(hex, 16) % 0x110000),
    )
    .replace(/&#(\d+);?/g, (_, dec: string) => String.fromCodePoint(Number(dec) % 0x110000));
}

/** A reference a reader resolves outside the output's own folder (after undoing escapes). */
function leavesFolder(raw: string): boolean {
  let value = expandReferences(raw);
  try {
    value = decodeURIComponent(value);
  } catch {
    // A malformed escape is read as written.
  }
  value = value.trim();
  if (value === "" || value.startsWith("#") || /^(?:data|https?|mailto):/i.test(value)) return false;
  return /^[a-z][a-z0-9+.-]*:/i.test(value) || /^[/\\~]/.test(value) || value.split(/[/\\]/).includes("..");
}

function quoted(text: string): string {
  return JSON.stringify(printable(Buffer.from(text.slice(0, 240), "utf8")).replace(/\\x[0-9a-f]{2}/g, "?"));
}
