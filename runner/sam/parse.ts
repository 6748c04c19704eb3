// The SAM parser: bytes -> front matter (gray-matter + yaml) -> metadata (zod) -> sections (Markdown
// blocks from markdown-it, or from remark where the two could differ: blocks.ts), then referenced
// sub-SAM files, recursively. Deterministic and LLM-free; every problem in every file is collected
// as a Diagnostic, so a scientist sees all of them at once.
import { existsSync, realpathSync } from "node:fs";
import { basename, dirname, join, posix, relative, resolve, sep } from "node:path";
import { sharedAssetFolders } from "./asset-folders.ts";
import { DiagnosticSink, hasErrors, sortDiagnostics } from "./diagnostics.ts";
import { splitFrontMatter } from "./frontmatter.ts";
import { readMetadata, SUB_SAM_KEYS } from "./metadata.ts";
import { type AgentThenJudge, agentThenJudge } from "./run-stage-judge.ts";
import { assignIds, parseBody } from "./sections.ts";
import { decodeSource, readSource, type SourceRead } from "./source.ts";
import type { Check, Diagnostic, ParseResult, SamDocument, SamMetadata, SamNode } from "./types.ts";

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
  if (parsed) state.diagnostics.push(...stageDiagnostics(state, parsed.node, parsed.metadata, input));
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
    }
  });
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

/**
 * What the stages of a SAM's checks can be told before a run: hidden_assets mean something only when
 * a compare stage sees them; a compare stage never sees the task folder, so one that names a file
 * of it (other than a check asset) would compare against nothing the agent cannot write, and one
 * that starts with an output would run the agent's file; a check whose exit status is forced to 0
 * passes whatever failed before it.
 */
function stageDiagnostics(
  state: ParseState,
  root: SamNode,
  metadata: SamMetadata,
  input: FileInput,
): Diagnostic[] {
  const found: Diagnostic[] = [];
  const compares: { file: string; line: number; check: Check }[] = [];
  const all: { file: string; line: number; check: Check }[] = [];
  const walk = (node: SamNode): void => {
    const file = node.source.file === input.absolute ? input.display : node.source.file;
    for (const item of node.items)
      for (const check of item.checks) {
        all.push({ file, line: check.line, check });
        if (check.stage === "compare") compares.push({ file, line: check.line, check });
      }
    node.children.forEach(walk);
  };
  walk(root);
  const at = (where: { file: string; line: number }, severity: "error" | "warning", message: string) =>
    found.push({ file: where.file, line: where.line, column: 1, severity, message });
  if ((metadata.hiddenAssets ?? []).length > 0 && compares.length === 0) {
    const text = input.source.ok ? input.source.text : "";
    const keyLine = text.split("\n").findIndex((line) => line.startsWith("hidden_assets:"));
    at(
      { file: input.display, line: keyLine + 1 || 1 },
      "warning",
      "hidden_assets are listed but no compare stage can see them: compare against them in a ```compare``` block (only compare stages see them; ```check``` blocks run the agent's work without them)",
    );
  }
  const samDir = dirname(input.absolute);
  const assets = metadata.checkAssets.map((a) =>
    relative(state.rootDir, resolve(samDir, a)).split(sep).join("/"),
  );
  for (const check of all) {
    if (check.check.stage === "compare" || check.check.hidden) continue;
    const found = agentThenJudge(check.check.command, assets, state.rootDir);
    if (found) at(check, "warning", agentThenJudgeMessage(found));
  }
  if (compares.length > 0) {
    for (const compare of compares) {
      const problem = compareProblem(compare.check.command, state.rootDir, assets);
      if (problem) at(compare, "error", problem);
    }
  }
  for (const check of all) {
    const forced = forcedSuccess(check.check.command);
    if (forced)
      at(
        check,
        "warning",
        `this check's exit status is forced to 0 by \`${forced}\`: whatever fails before it passes the check; remove it (checks run with bash -o pipefail, so a failing command anywhere in a pipeline fails the check)`,
      );
  }
  return found;
}

function agentThenJudgeMessage(found: AgentThenJudge): string {
  const where = found.inside ? ` (in check asset \`${found.inside}\`)` : "";
  return `this run stage runs the agent's code (\`${found.agent}\`) and then a check asset that judges (\`${found.judge}\`) in one script${where}: the judge runs beside the agent's code, so its exit status is the agent's to forge (a process left behind, a file swapped). Run the agent's work here and declare what it writes (\`\`\`check outputs=...\`), then judge that in a \`\`\`compare\`\`\` stage that reads \`outputs/...\` as data (docs/loop.md, Checks in stages)`;
}

/** Why a compare stage's command cannot do what it means, or undefined. */
function compareProblem(command: string, rootDir: string, assets: readonly string[]): string | undefined {
  const runs = runsAnOutput(command);
  if (runs) return runs;
  const words = shellWords(command);
  for (const word of words) {
    if (isOutputPath(word) || word.startsWith("-") || /[$*?=`]/.test(word) || word.startsWith("/")) continue;
    const rel = posix.normalize(word).replace(/\/$/, "");
    if (rel === "." || rel.startsWith("..")) continue;
    const isAsset = assets.some((a) => a === rel || a.startsWith(`${rel}/`));
    if (isAsset || !existsSync(join(rootDir, rel))) continue;
    return `a compare stage names \`${word}\`, a file of the task folder that is not a check asset: a compare stage never sees the task folder (only the check assets and, under outputs/, the declared outputs). Declare it as an output of the run stage (\`\`\`check outputs=${rel}\`) and read it as \`outputs/${rel}\`, or list it in check_assets if it is the runner's`;
  }
  return undefined;
}

/** Shells and interpreters: the script they are given runs as code. */
const INTERPRETERS =
  /^(sh|bash|dash|ash|ksh|zsh|fish|csh|tcsh|python[0-9.]*|pypy[0-9.]*|perl|ruby|node|nodejs|deno|bun|php|lua|luajit|Rscript|R|julia|octave|tclsh|awk|gawk|mawk)$/;
/** Compilers, simulators and build tools: whatever they are given is built or run. */
const BUILDERS =
  /^(iverilog|vvp|verilator|gcc|g\+\+|cc|c\+\+|clang|clang\+\+|gfortran|f95|ld|make|gmake|cmake|java|javac|go|rustc|cargo)$/;
/** Builtins that run their argument as code. */
const SOURCING = /^(\.|source|eval|exec)$/;
/** Programs that run another program: looked through, with their own options. */
const WRAPPERS = /^(env|timeout|nice|nohup|setsid|stdbuf|command|builtin|time|xargs)$/;

/** An output's name that says it is code (a source file or a script), however it is passed on. */
const CODE_FILE =
  /\.(py|pyc|sh|bash|v|sv|vh|svh|vhd|vhdl|c|h|cc|cpp|cxx|hpp|f|f90|f95|f03|for|mod|so|o|a|r|R|jl|pl|pm|rb|js|mjs|cjs|ts|php|lua|m|tcl|mk|cmake|java|class|jar|go|rs)$/;

/**
 * A compare stage reads outputs as data (an argument of a check asset, or of a tool like cmp or
 * diff). One that runs an output, hands it to a shell, an interpreter, a compiler or a simulator as
 * what it runs, sources it, feeds it to a shell's input, or takes an output that is code at all, runs
 * the agent's code beside the reference. What it does instead, or undefined. A lint of the text: a
 * check asset that imports an output it is given is beyond it (docs/loop.md, Checks in stages).
 */
function runsAnOutput(command: string): string | undefined {
  const fix =
    "run the agent's code in a run stage (```check outputs=...```, no hidden asset there) and let the compare stage read only its results";
  for (const pipeline of command.split(/\n|;|&&|\|\||(?<![|])&(?![&])/)) {
    const stages = pipeline.split(/\|(?!\|)/);
    const hasOutput = stages.some((stage) => /(^|[\s'"=<(`])(\.\/)?outputs\//.test(stage));
    for (const [k, stage] of stages.entries()) {
      const all = shellWords(stage);
      const code = all.filter(isOutputPath).find((w) => CODE_FILE.test(w));
      if (code)
        return `a compare stage takes \`${code}\`, an output that is code: whatever reads it (a grader that imports it, a compiler, a simulator) runs the agent's code beside the reference; ${fix}`;
      let words = all.filter((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w));
      while (WRAPPERS.test(basenameOf(words[0]))) {
        // The wrapper's own options and numbers (timeout 10, nice -n 5) come before what it runs.
        const rest = words.slice(1);
        const start = rest.findIndex((x) => !/^-|^\d+[smhd]?$/.test(x));
        words = start < 0 ? [] : rest.slice(start);
      }
      const first = words[0] ?? "";
      const program = basenameOf(first);
      const outputs = words.filter(isOutputPath);
      if (isOutputPath(first))
        return `a compare stage runs \`${first}\`, a file the agent's work made; ${fix}`;
      if (program === "cd" && outputs.length > 0)
        return `a compare stage changes into \`${outputs[0]}\`: the agent's files would be its working folder; read outputs by their path instead`;
      if ((SOURCING.test(program) || BUILDERS.test(program)) && outputs.length > 0)
        return `a compare stage hands \`${outputs[0]}\` to \`${program}\`, which runs or builds it as code beside the reference; ${fix}`;
      if (!INTERPRETERS.test(program)) continue;
      const inline = words.includes("-c") || words.includes("-e");
      const script = words.slice(1).find((w) => !w.startsWith("-"));
      if (!inline && script !== undefined && isOutputPath(script))
        return `a compare stage hands \`${script}\` to \`${program}\`, which runs it as code beside the reference; ${fix}`;
      if (inline && /(\$\(|`)[^)`]*outputs\//.test(stage))
        return `a compare stage runs the text of an output as code (\`${program} -c\` with a substitution of it); ${fix}`;
      if (!inline && script === undefined && (k > 0 ? hasOutput : /<\s*(\.\/)?outputs\//.test(stage)))
        return `a compare stage feeds an output to \`${program}\`'s input, which runs it as code beside the reference; ${fix}`;
    }
  }
  return undefined;
}

function basenameOf(word: string | undefined): string {
  return (word ?? "").split("/").at(-1) ?? "";
}

function isOutputPath(word: string): boolean {
  return /^(?:\.\/)?outputs(?:\/|$)/.test(word);
}

/** The words of a shell command, quotes removed, split at blanks and operators (a lint, not a parser). */
function shellWords(command: string): string[] {
  return command
    .split(/[\s;&|()<>]+/)
    .map((w) => w.replace(/^['"]|['"]$/g, ""))
    .filter((w) => w !== "");
}

/**
 * What forces a check's exit status to 0 whatever failed before it, if anything: `|| true`, `|| :`,
 * `|| exit 0`, `|| echo …`, `set +o pipefail`, a last command run in the background (`… &`), a last
 * `if` without `else`, or a last `true`, `:`, `exit 0`, `echo` or `printf` after other commands.
 */
function forcedSuccess(command: string): string | undefined {
  const or = /\|\|\s*(true|:|exit\s+0|echo|printf)(?=\s|;|\)|$)/m.exec(command);
  if (or) return or[0];
  const pipefail = /\bset\s+\+o\s+pipefail\b/.exec(command);
  if (pipefail) return pipefail[0];
  const text = command.trim();
  if (/(^|[^&])&\s*$/.test(text)) return "&";
  if (
    /(^|[;\n]\s*)if\b[\s\S]*\bfi$/.test(text) &&
    !/\belse\b/.test(text.slice(text.search(/(^|[;\n]\s*)if\b/)))
  )
    return "if … fi without else";
  // A check that is only `true` verifies nothing, but hides nothing either: that is for the review.
  const commands = text
    .split(/[;\n]/)
    .map((c) => c.trim())
    .filter(Boolean);
  const last = commands.at(-1) ?? "";
  if (commands.length > 1 && /^(true|:|exit 0|echo\b.*|printf\b.*)$/.test(last)) return last;
  return undefined;
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
