// Which files a compare stage's script reads that its folder can never hold. A compare stage's
// /task is the runner's folder (docs/loop.md, Checks in stages): the check assets and, under
// outputs/, what the run stages before it declared with `outputs=`; nothing of the task folder. So
// a path it names that is neither (`cmp answer.txt checks/ref.txt`) makes a check that can never
// pass, whether or not the file exists in the task folder yet. A lint of the text alone: what the
// task folder holds never counts (the agent writes it, so a file it leaves there must not make a
// valid SAM invalid); a path counts when it reads like a file name and nothing in the stage could
// have written it before it is read.
import { posix } from "node:path";
import { type LintCommand, type LintWord, lintCommands, wrappedProgram } from "./shell-lint.ts";

export interface CompareFolder {
  /** Check assets, task-folder relative, `/`-separated. */
  assets: readonly string[];
  /** The outputs (`outputs=`) of the run stages that run before this compare stage in its check phase. */
  declared: readonly string[];
  /** Outputs only run stages after it declare (named in the message: they are never there in time). */
  later?: readonly string[];
}

export type CompareRead =
  /**
   * A task-folder path (`answer.txt`): the compare stage never sees it. `runs`: as its program;
   * `declared`: a run stage before it declares it (so it is there as `outputs/<rel>`).
   */
  | { kind: "task-file"; word: string; rel: string; runs: boolean; declared: boolean }
  /** `outputs/x` that no run stage before it declares: the runner never puts it there in time. */
  | { kind: "undeclared-output"; word: string; rel: string; later: boolean };

/** Extensions that make a word read as a file name even when no such file exists yet. */
const FILE_EXTENSIONS = new Set(
  (
    "txt csv tsv json jsonl ndjson yaml yml toml xml dat out log res npy npz h5 hdf5 hdf nc root " +
    "parquet feather pkl pickle mat png jpg jpeg svg pdf eps vcd fst ghw lxt md rst tex html ini cfg " +
    "conf bin raw gz bz2 xz zst zip tar tgz sqlite db " +
    "py sh bash v sv vh svh vhd vhdl c h cc cpp cxx hpp f f90 f95 f03 for mod so o a r jl pl pm rb js " +
    "mjs cjs ts php lua m tcl mk cmake java class jar go rs ipynb"
  ).split(" "),
);

/**
 * Programs that only read the files they are named: a path named to one of them, or before any
 * other program ran, is read from the folder as the stage found it.
 */
const READERS = new Set([
  ...(
    "test [ [[ cmp diff diff3 grep egrep fgrep zgrep cat zcat head tail wc echo printf true false : " +
    "exit cut tr uniq comm paste join column jq sha256sum sha1sum sha512sum md5sum cksum b2sum " +
    "numdiff ndiff ls stat file du readlink realpath od xxd hexdump strings expr seq sleep read"
  ).split(" "),
  // A `for` list's words (shell-lint.ts), and a command of assignments or redirections only.
  "for",
  "",
]);

/** Readers whose every operand is a file (numbers aside: `cmp -n 100`, `diff -U 3`). */
const FILE_OPERANDS = new Set(
  "cmp diff diff3 numdiff ndiff cat zcat sha256sum sha1sum sha512sum md5sum cksum b2sum".split(" "),
);

/** Programs whose arguments (or last argument) are files they create. */
const CREATE_ALL = new Set(["tee", "touch", "mkdir"]);
const CREATE_LAST = new Set(["cp", "mv", "ln", "install", "rsync"]);
/** Build tools: their arguments are targets they make (`make -f checks/cmp.mk got.txt`). */
const BUILD_TARGETS = new Set(["make", "gmake", "ninja"]);
/** Options whose value is a file a program writes (`-o sim`, `--output=x.txt`). */
const OUTPUT_OPTION = /^(-o|--output|--out|--outfile|--output-file)$/;
const OUTPUT_OPTION_VALUE = /^(?:-o|--output|--out|--outfile|--output-file)=(.+)$/;
/** `dd`'s operand that names the file it writes (`of=`); `if=` is a read like any `name=value`. */
const DD_OUTPUT = /^of=/;

/** A path a command names: `writes` when the command writes it there (`> x`, `-o x`, `tee x`). */
interface Named {
  word: string;
  rel: string;
  runs: boolean;
  writes: boolean;
  /** An operand of the program (after it, not a redirection). */
  operand: boolean;
}

/** The first path the compare stage reads that its folder can never hold, if any. */
export function compareRead(script: string, folder: CompareFolder): CompareRead | undefined {
  const commands = lintCommands(script);
  const paths = commands.map(commandPaths);
  /** The last command that names each path (a Map, so a long script stays linear). */
  const lastNamed = new Map<string, number>();
  paths.forEach((named, index) => {
    for (const { rel } of named) lastNamed.set(rel, index);
  });
  const lookup: Lookup = {
    assets: withAncestors(folder.assets),
    declared: new Set(folder.declared),
    declaredFolders: withAncestors(folder.declared),
    later: new Set(folder.later ?? []),
    // What the commands before the current one wrote: a path is produced only once it was written.
    produced: new Set<string>(),
  };
  const fileUses = loopFileUses(commands);
  let writerRan = false;
  for (const [index, command] of commands.entries()) {
    // A loop's list is read only where a command after it reads its variable as a file.
    const use = command.loop === undefined ? undefined : fileUses.get(command.loop);
    if (command.loop !== undefined && (use?.index ?? -1) <= index) continue;
    // A list handed to a program that is no reader (`python3 checks/grade.py "$f"`) is judged as
    // that program's operands are (`python3 checks/grade.py answer.txt`).
    const program = use?.program ?? programOf(command.words);
    const named = paths[index] ?? [];
    const writesHere = new Set(named.filter((n) => n.writes).map((n) => n.rel));
    for (const { word, rel, runs, writes, operand } of named) {
      if (writes) continue;
      // cmp's and diff's operands are files whatever their names (`cmp solution checks/ref.txt`), so
      // is a program named by a path (`./grade`, `bin/grade`), and a word ending in / is a folder.
      const file =
        looksLikeFile(rel) ||
        word.endsWith("/") ||
        (runs && word.includes("/")) ||
        (operand && FILE_OPERANDS.has(program) && !/^\d/.test(rel));
      const problem = judgePath(word, rel, file, lookup);
      if (problem !== "maybe") {
        if (problem) return problem;
        continue;
      }
      const declared = lookup.declared.has(rel);
      // Read by the command that then writes it (`sort -o F F`): the folder's F is what it reads.
      if (writesHere.has(rel)) return { kind: "task-file", word, rel, runs, declared };
      // A file name nothing could have written yet: read from the folder as the stage found it.
      // Named to a program that may write it and read again later, it is that program's output.
      const namedLater = (lastNamed.get(rel) ?? index) > index;
      if (declared || (!writerRan && (READERS.has(program) || !namedLater)))
        return { kind: "task-file", word, rel, runs, declared };
    }
    for (const rel of writesHere) lookup.produced.add(rel);
    // After `cd` the words are relative to a folder the lint does not follow.
    if (program === "cd" || program === "pushd" || program === "popd") return undefined;
    if (!READERS.has(program)) writerRan = true;
  }
  return undefined;
}

/** Programs that read a file given as any operand: a loop variable given to one is a path read. */
const READS_OPERANDS = new Set([
  ...FILE_OPERANDS,
  ..."head tail wc sort uniq comm paste join cut jq stat file du od xxd hexdump strings".split(" "),
]);

/**
 * Where each variable is last read as a file, and as whose operand: a whole word `$v` or `${v}` as
 * an operand of a program that reads its operands (`for`: judged as a reader), of a program that is
 * no reader and creates nothing (judged as that program), or as the target of `<` (`for f in a.txt;
 * do cmp "$f" ref; done` reads a.txt; `test -n "$f"` or `outputs/$f` reads no word of the list).
 */
function loopFileUses(commands: readonly LintCommand[]): Map<string, { index: number; program: string }> {
  const uses = new Map<string, { index: number; program: string }>();
  const variable = (word: LintWord) => /^\$(?:([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\})$/.exec(word.text);
  commands.forEach((command, index) => {
    const at = programIndex(command.words);
    const name = posix.basename(command.words[at]?.text ?? "");
    const other =
      !READERS.has(name) &&
      !CREATE_ALL.has(name) &&
      !CREATE_LAST.has(name) &&
      !BUILD_TARGETS.has(name) &&
      !/^(cd|pushd|popd)$/.test(name);
    const reads = READS_OPERANDS.has(name) || other;
    const program = READS_OPERANDS.has(name) || !other ? "for" : name;
    const operands = (reads ? command.words.slice(at + 1) : []).map((word) => ({ word, program }));
    const redirected = command.redirects
      .filter((r) => /^\d*<$/.test(r.op))
      .map((r) => ({ word: r.target, program: "for" }));
    for (const { word, program: by } of [...operands, ...redirected]) {
      const found = variable(word);
      if (found) uses.set(found[1] ?? found[2] ?? "", { index, program: by });
    }
  });
  return uses;
}

/** A problem, nothing (`undefined`: the path is fine), or `maybe` (a file name not yet known). */
function judgePath(
  word: string,
  rel: string,
  file: boolean,
  lookup: Lookup,
): CompareRead | undefined | "maybe" {
  if (rel === "outputs" || rel.startsWith("outputs/")) {
    const inside = rel.slice("outputs/".length);
    // A declared output, a folder holding one, or a path inside a declared one.
    const covered =
      rel === "outputs" || lookup.declaredFolders.has(inside) || underAny(inside, lookup.declared);
    return covered
      ? undefined
      : { kind: "undeclared-output", word, rel: inside, later: underAny(inside, lookup.later) };
  }
  if (lookup.assets.has(rel) || underAny(rel, lookup.produced)) return undefined;
  return file ? "maybe" : undefined;
}

interface Lookup {
  /** The check assets and every folder on their way. */
  assets: ReadonlySet<string>;
  declared: ReadonlySet<string>;
  /** The declared outputs and every folder on their way. */
  declaredFolders: ReadonlySet<string>;
  later: ReadonlySet<string>;
  produced: Set<string>;
}

/** The paths and every folder above them (`a/b/c` gives `a/b/c`, `a/b`, `a`). */
function withAncestors(paths: readonly string[]): Set<string> {
  const set = new Set<string>();
  for (const path of paths)
    for (let at = path; at !== "." && at !== "" && !set.has(at); at = posix.dirname(at)) set.add(at);
  return set;
}

/** Whether `path` is one of `set` or lies under one of them. */
function underAny(path: string, set: ReadonlySet<string>): boolean {
  for (let at = path; at !== "." && at !== ""; at = posix.dirname(at)) if (set.has(at)) return true;
  return false;
}

/**
 * The relative paths a command names, each marked as written or read: its words (an option's or a
 * `name=value` operand's value, as `--ref=x.txt` and `dd if=x.txt` name x.txt) and its redirections.
 */
function commandPaths(command: LintCommand): Named[] {
  const { words } = command;
  const at = programIndex(words);
  const program = posix.basename(words[at]?.text ?? "");
  const writes = new Set<number>(wrappedProgram(words.map((w) => w.text)).creates);
  words.forEach((word, k) => {
    if (OUTPUT_OPTION.test(word.text)) writes.add(k + 1);
    if (OUTPUT_OPTION_VALUE.test(word.text) || (program === "dd" && DD_OUTPUT.test(word.text))) writes.add(k);
  });
  // The operands after the program: not options, not `name=value` (make's variables are no targets).
  const files = words
    .map((word, k) => ({ word, k }))
    .filter(({ word, k }) => k > at && !word.text.startsWith("-") && !/^[A-Za-z_][\w-]*=/.test(word.text))
    .map(({ k }) => k);
  if (CREATE_ALL.has(program) || BUILD_TARGETS.has(program)) for (const k of files) writes.add(k);
  const last = files.at(-1);
  if (CREATE_LAST.has(program) && last !== undefined) writes.add(last);
  const named = [
    ...words.map((w, k) => ({
      word: operandValue(w, k > at),
      runs: k === at,
      writes: writes.has(k),
      operand: k > at,
    })),
    ...command.redirects
      .filter((r) => /^\d*<$/.test(r.op) || r.op.includes(">"))
      .map((r) => ({ word: r.target, runs: false, writes: r.op.includes(">"), operand: false })),
    // `xargs cmd <<< "a b"`: xargs hands the here-string's words to cmd as its operands.
    ...(words.slice(0, at).some((w) => posix.basename(w.text) === "xargs")
      ? command.redirects
          .filter((r) => r.op === "<<<")
          .flatMap((r) =>
            r.target.text
              .split(/\s+/)
              .filter(Boolean)
              .map((text) => ({
                word: { text, expands: r.target.expands },
                runs: false,
                writes: false,
                operand: true,
              })),
          )
      : []),
  ];
  return named.flatMap(({ word, runs, writes, operand }) => {
    const rel = relativePath(word);
    return rel === undefined ? [] : [{ word: word.text, rel, runs, writes, operand }];
  });
}

/** `--ref=answer.txt` names `answer.txt`; so does an operand `if=answer.txt` after the program. */
function operandValue(word: LintWord, operand: boolean): LintWord {
  const value = (/^--?[A-Za-z][\w-]*=(.+)$/.exec(word.text) ??
    (operand ? /^[A-Za-z_][\w-]*=(.+)$/.exec(word.text) : null))?.[1];
  return value === undefined ? word : { ...word, text: value };
}

/**
 * The word as a task-folder relative path, or undefined when it is not one the lint can judge.
 * `/task/x` is x: /task is the compare stage's own folder (docs/loop.md), in any spelling the
 * kernel reads as it (`//task/x`, `/task/./x`, `/task/../task/x`).
 */
function relativePath(word: LintWord): string | undefined {
  const absolute = word.text.startsWith("/") ? posix.normalize(word.text).replace(/^\/+/, "/") : "";
  const text = absolute.startsWith("/task/") ? absolute.slice("/task/".length) : word.text;
  if (word.expands || text === "" || text.startsWith("-") || text.startsWith("/")) return undefined;
  if (!/^[A-Za-z0-9_.+\-/]+$/.test(text)) return undefined;
  const rel = posix.normalize(text).replace(/\/$/, "");
  if (rel === "." || rel === ".." || rel.startsWith("../")) return undefined;
  return rel;
}

function looksLikeFile(rel: string): boolean {
  const name = posix.basename(rel);
  const dot = name.lastIndexOf(".");
  if (dot <= 0) return false;
  return /^[A-Za-z0-9_+-]/.test(name) && FILE_EXTENSIONS.has(name.slice(dot + 1).toLowerCase());
}

/** The base name of the program a command runs: past assignments and wrappers with their options. */
function programOf(words: readonly LintWord[]): string {
  return posix.basename(words[programIndex(words)]?.text ?? "");
}

function programIndex(words: readonly LintWord[]): number {
  return wrappedProgram(words.map((w) => w.text)).at;
}
