// The SAM parser: bytes -> front matter (gray-matter + yaml) -> metadata (zod) -> sections (Markdown
// blocks from markdown-it, or from remark where the two could differ: blocks.ts), then referenced
// sub-SAM files, recursively. Deterministic and LLM-free; every problem in every file is collected
// as a Diagnostic, so a scientist sees all of them at once.
import { existsSync, readdirSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join, posix, relative, resolve, sep } from "node:path";
import { sharedAssetFolders } from "./asset-folders.ts";
import { DiagnosticSink, hasErrors, sortDiagnostics } from "./diagnostics.ts";
import { splitFrontMatter } from "./frontmatter.ts";
import { readMetadata, SUB_SAM_KEYS } from "./metadata.ts";
import { assignIds, parseBody } from "./sections.ts";
import { decodeSource, readSource, type SourceRead } from "./source.ts";
import { stageDiagnostics } from "./stage-lint.ts";
import type { Diagnostic, ParseResult, SamDocument, SamMetadata, SamNode } from "./types.ts";

interface ParseState {
  diagnostics: Diagnostic[];
  files: { file: string; sha256: string }[];
  /** Real path of the top-level SAM's folder: sub-SAMs and check assets must stay inside it. */
  rootDir: string;
  rootDisplay: string;
  /** Real paths of sub-SAM files already included -> how they were named, to refuse repeats. */
  included: Map<string, string>;
}

interface FileInput {
  /** The path as the caller gave it (used in diagnostics). */
  display: string;
  /** Absolute path (not resolved through symlinks), used in the JSON. */
  absolute: string;
  source: SourceRead;
}

/** Parses a SAM file and every sub-SAM file it references. */
export async function parseSam(file: string): Promise<ParseResult> {
  return parseSamSync(file);
}

/** Synchronous variant (tests, benchmark, the daemon's quick re-validation). */
export function parseSamSync(file: string): ParseResult {
  return parseRoot({ display: file, absolute: resolve(file), source: readSource(file) });
}

/** Parses SAM text as if it were the file `file` (referenced sub-SAMs are read relative to it). */
export function parseSamString(text: string, file: string): ParseResult {
  return parseRoot({
    display: file,
    absolute: resolve(file),
    source: decodeSource(new TextEncoder().encode(text)),
  });
}

function parseRoot(input: FileInput): ParseResult {
  // Real paths cost a system call each; most SAMs name no sub-SAM or asset and never need them.
  let rootDir: string | undefined;
  const state: ParseState = {
    diagnostics: [],
    files: [],
    get rootDir() {
      rootDir ??= realDir(input.absolute);
      return rootDir;
    },
    rootDisplay: input.display,
    included: new Map(),
  };
  const parsed = parseFile(state, input, "root", () => [realOr(input.absolute)]);
  if (parsed) {
    const text = input.source.ok ? input.source.text : "";
    const lint = { rootDir: state.rootDir, display: input.display, absolute: input.absolute, text };
    state.diagnostics.push(...stageDiagnostics(lint, parsed.node, parsed.metadata));
  }
  const diagnostics = sortDiagnostics(state.diagnostics);
  if (!parsed || hasErrors(diagnostics) || input.source.ok === false) return { ok: false, diagnostics };
  assignIds(parsed.node);
  const sam: SamDocument = {
    file: input.absolute,
    sha256: input.source.sha256,
    metadata: parsed.metadata,
    root: parsed.node,
    files: state.files,
  };
  return { ok: true, sam, diagnostics };
}

function parseFile(
  state: ParseState,
  input: FileInput,
  role: "root" | "sub",
  /** Real paths of the files that include this one, this one last (computed when needed). */
  chain: () => string[],
): { node: SamNode; metadata: SamMetadata } | undefined {
  if (!input.source.ok) {
    state.diagnostics.push({ file: input.display, ...input.source.diagnostic });
    return undefined;
  }
  const { text, sha256 } = input.source;
  state.files.push({ file: input.absolute, sha256 });
  const sink = new DiagnosticSink(input.display, text, state.diagnostics);
  const front = splitFrontMatter(text, sink);
  const { metadata, itemOffsets } = readMetadata({
    doc: front.doc,
    yamlStart: front.yamlStart,
    sink,
    defaultName: defaultName(input.absolute),
    ...(role === "sub" ? { allowedKeys: SUB_SAM_KEYS, rootFile: state.rootDisplay } : {}),
  });
  const node = front.skipBody ? undefined : parseBody(front.body, front.bodyStart, input.absolute, sink);
  if (role === "root") {
    checkAssets(state, input, metadata.checkAssets, itemOffsets.get("check_assets") ?? [], sink);
    if (metadata.hiddenAssets) {
      checkAssets(state, input, metadata.hiddenAssets, itemOffsets.get("hidden_assets") ?? [], sink);
      // A hidden asset is a check asset: everything that guards assets guards it too.
      const listed = new Set(metadata.checkAssets);
      metadata.checkAssets = [
        ...metadata.checkAssets,
        ...metadata.hiddenAssets.filter((a) => !listed.has(a)),
      ];
    }
    warnSharedAssetFolders(state, input, metadata, itemOffsets, sink);
  }
  const included = metadata.subtasks.length > 0 ? chain() : [];
  metadata.subtasks.forEach((path, i) => {
    const child = parseSubtask(state, input, path, itemOffsets.get("subtasks")?.[i] ?? 0, sink, included);
    if (child && node) node.children.push(child);
  });
  return node ? { node, metadata } : undefined;
}

function parseSubtask(
  state: ParseState,
  parent: FileInput,
  path: string,
  offset: number,
  sink: DiagnosticSink,
  chain: string[],
): SamNode | undefined {
  const absolute = resolve(dirname(parent.absolute), path);
  const display = join(dirname(parent.display), path);
  if (!path.toLowerCase().endsWith(".md")) {
    sink.error(offset, `subtask \`${path}\` is not a Markdown file; sub-SAM files end in \`.md\``);
    return undefined;
  }
  if (!existsSync(absolute)) {
    sink.error(offset, `subtask file \`${path}\` does not exist (looked for ${absolute})`);
    return undefined;
  }
  const real = realOr(absolute);
  if (!isInside(real, state.rootDir)) {
    sink.error(
      offset,
      `subtask file \`${path}\` resolves outside the task folder ${state.rootDir}; keep sub-SAMs inside it`,
    );
    return undefined;
  }
  if (chain.includes(real)) {
    const names = [...chain.slice(chain.indexOf(real)), real].map(
      (p) => relative(state.rootDir, p) || basename(p),
    );
    sink.error(offset, `subtask cycle: ${names.join(" -> ")}; a SAM cannot include itself`);
    return undefined;
  }
  const earlier = state.included.get(real);
  if (earlier !== undefined) {
    sink.error(
      offset,
      `subtask file \`${path}\` is already included (as ${earlier}); include each sub-SAM file once`,
    );
    return undefined;
  }
  state.included.set(real, display);
  const parsed = parseFile(state, { display, absolute, source: readSource(absolute) }, "sub", () => [
    ...chain,
    real,
  ]);
  return parsed?.node;
}

function checkAssets(
  state: ParseState,
  input: FileInput,
  assets: string[],
  offsets: number[],
  sink: DiagnosticSink,
): void {
  assets.forEach((asset, i) => {
    const offset = offsets[i] ?? 0;
    const absolute = resolve(dirname(input.absolute), asset);
    if (!existsSync(absolute)) {
      sink.error(offset, `check asset \`${asset}\` does not exist (looked for ${absolute})`);
    } else if (!isInside(realOr(absolute), state.rootDir)) {
      sink.error(
        offset,
        `check asset \`${asset}\` resolves outside the task folder ${state.rootDir} (through a symlink)`,
      );
    } else if (isFolder(absolute)) {
      // The runner keeps, restores and hides assets file by file, and searches the task folder for
      // each hidden file's content: a folder would be none of these (its files not hidden, their
      // copies not searched for).
      const first = firstFile(absolute);
      sink.error(
        offset,
        `check asset \`${asset}\` is a folder: list the files in it one by one${first ? ` (e.g. \`${posix.join(asset.replace(/\/+$/, ""), first)}\`)` : ""}; the runner keeps its own copy of each check asset file, hides each hidden one and searches the task folder for copies of its content`,
      );
    }
  });
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** A file name in `dir` (for the example in the error), or undefined. */
function firstFile(dir: string): string | undefined {
  try {
    return readdirSync(dir, { withFileTypes: true }).find((e) => e.isFile())?.name;
  } catch {
    return undefined;
  }
}

/**
 * An asset next to files that are not assets can be shadowed by a file the agent adds beside it; in
 * a folder of their own, the runner restores assets exactly (agent-added files are removed).
 */
function warnSharedAssetFolders(
  state: ParseState,
  input: FileInput,
  metadata: SamMetadata,
  itemOffsets: ReadonlyMap<string, number[]>,
  sink: DiagnosticSink,
): void {
  const samDir = dirname(input.absolute);
  const rels = new Map<string, number>();
  metadata.checkAssets.forEach((asset, i) => {
    const absolute = resolve(samDir, asset);
    if (!existsSync(absolute)) return;
    const rel = relative(state.rootDir, realOr(absolute)).split(sep).join("/");
    const offset =
      itemOffsets.get("check_assets")?.[i] ??
      itemOffsets.get("hidden_assets")?.[(metadata.hiddenAssets ?? []).indexOf(asset)] ??
      0;
    rels.set(rel, offset);
  });
  if (rels.size === 0) return; // (nothing to look at: no need for the real root folder)
  for (const folder of sharedAssetFolders(state.rootDir, new Set(rels.keys()))) {
    const first = [...rels].find(([rel]) => posix.dirname(rel) === folder);
    const shown = folder === "." ? "the task folder itself" : `\`${folder}/\``;
    sink.warning(
      first?.[1] ?? 0,
      `check asset \`${first?.[0] ?? folder}\` shares ${shown} with files that are not check assets; a file the agent adds there can shadow it (an included header, an imported module). Move the check assets into a folder of their own (e.g. checks/) that holds nothing else`,
    );
  }
}

/** `task.md` takes its folder's name; any other file its own base name. Made into a valid name. */
function defaultName(absolute: string): string {
  const base = basename(absolute).replace(/\.md$/i, "");
  const raw = base.toLowerCase() === "task" ? basename(dirname(absolute)) : base;
  const name = raw.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return name === "" ? "sam" : name.slice(0, 128);
}

function realOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function realDir(absoluteFile: string): string {
  return realOr(dirname(absoluteFile));
}

function isInside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}
