// Which files a compare stage's script reads that its folder can never hold. A compare stage's
// /task is the runner's folder (docs/loop.md, Checks in stages): the check assets and, under
// outputs/, what the run stages declared with `outputs=`; nothing of the task folder. So a path it
// names that is neither (`cmp answer.txt checks/ref.txt`) makes a check that can never pass,
// whether or not the file exists in the task folder yet. A lint of the text: a path counts when
// the task folder has it, or when it reads like a file name and nothing in the stage could have
// written it before it is read.
import { posix } from "node:path";
import { type LintCommand, type LintWord, lintCommands, WRAPPERS } from "./shell-lint.ts";

export interface CompareFolder {
  /** Check assets, task-folder relative, `/`-separated. */
  assets: readonly string[];
  /** Every run stage's declared outputs (`outputs=`), anywhere in the SAM. */
  declared: readonly string[];
  /** Whether the task folder has this relative path now. */
  exists(rel: string): boolean;
}

export type CompareRead =
  /**
   * A task-folder path (`answer.txt`): the compare stage never sees it. `runs`: as its program;
   * `declared`: a run stage declares it (so it is there as `outputs/<rel>`).
   */
  | { kind: "task-file"; word: string; rel: string; runs: boolean; declared: boolean }
  /** `outputs/x` that no run stage declares: the runner never puts it there. */
  | { kind: "undeclared-output"; word: string; rel: string };

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
const READERS = new Set(
  (
    "test [ [[ cmp diff diff3 grep egrep fgrep zgrep cat zcat head tail wc echo printf true false : " +
    "exit cut tr uniq comm paste join column jq sha256sum sha1sum sha512sum md5sum cksum b2sum " +
    "numdiff ndiff ls stat file du readlink realpath od xxd hexdump strings expr seq sleep read"
  ).split(" "),
);

/** Programs whose arguments (or last argument) are files they create. */
const CREATE_ALL = new Set(["tee", "touch", "mkdir"]);
const CREATE_LAST = new Set(["cp", "mv", "ln", "install", "rsync"]);
/** Build tools: their arguments are targets they make (`make -f checks/cmp.mk got.txt`). */
const BUILD_TARGETS = new Set(["make", "gmake", "ninja"]);
/** Options whose value is a file a program writes (`-o sim`, `--output=x.txt`). */
const OUTPUT_OPTION = /^(-o|--output|--out|--outfile|--output-file)$/;
const OUTPUT_OPTION_VALUE = /^(?:-o|--output|--out|--outfile|--output-file)=(.+)$/;

/** The first path the compare stage reads that its folder can never hold, if any. */
export function compareRead(script: string, folder: CompareFolder): CompareRead | undefined {
  const commands = lintCommands(script);
  const produced = producedPaths(commands);
  /** The last command that names each path (a Map, so a long script stays linear). */
  const lastNamed = new Map<string, number>();
  const paths = commands.map(commandPaths);
  paths.forEach((named, index) => {
    for (const { rel } of named) lastNamed.set(rel, index);
  });
  const lookup: Lookup = {
    assets: withAncestors(folder.assets),
    declared: new Set(folder.declared),
    declaredFolders: withAncestors(folder.declared),
    produced,
  };
  let writerRan = false;
  for (const [index, command] of commands.entries()) {
    const program = programOf(command.words);
    for (const { word, rel, runs } of paths[index] ?? []) {
      const problem = judgePath(word, rel, runs, folder, lookup);
      if (problem !== "maybe") {
        if (problem) return problem;
        continue;
      }
      // A file name nothing could have written yet: read from the folder as the stage found it.
      // Named to a program that may write it and read again later, it is that program's output.
      const namedLater = (lastNamed.get(rel) ?? index) > index;
      const declared = lookup.declared.has(rel);
      if (declared || (!writerRan && (READERS.has(program) || !namedLater)))
        return { kind: "task-file", word, rel, runs, declared };
    }
    // After `cd` the words are relative to a folder the lint does not follow.
    if (program === "cd" || program === "pushd" || program === "popd") return undefined;
    if (!READERS.has(program)) writerRan = true;
  }
  return undefined;
}

/** A problem, nothing (`undefined`: the path is fine), or `maybe` (a file name not yet known). */
function judgePath(
  word: string,
  rel: string,
  runs: boolean,
  folder: CompareFolder,
  lookup: Lookup,
): CompareRead | undefined | "maybe" {
  if (rel === "outputs" || rel.startsWith("outputs/")) {
    const inside = rel.slice("outputs/".length);
    // A declared output, a folder holding one, or a path inside a declared one.
    const covered =
      rel === "outputs" || lookup.declaredFolders.has(inside) || underAny(inside, lookup.declared);
    return covered ? undefined : { kind: "undeclared-output", word, rel: inside };
  }
  if (lookup.assets.has(rel) || underAny(rel, lookup.produced)) return undefined;
  if (folder.exists(rel)) return { kind: "task-file", word, rel, runs, declared: lookup.declared.has(rel) };
  return looksLikeFile(rel) ? "maybe" : undefined;
}

interface Lookup {
  /** The check assets and every folder on their way. */
  assets: ReadonlySet<string>;
  declared: ReadonlySet<string>;
  /** The declared outputs and every folder on their way. */
  declaredFolders: ReadonlySet<string>;
  produced: ReadonlySet<string>;
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

/** Relative paths a command names: its words and the files it redirects from. */
function commandPaths(command: LintCommand): { word: string; rel: string; runs: boolean }[] {
  const program = programIndex(command.words);
  const words = [
    ...command.words.map((w, k) => ({ word: optionValue(w), runs: k === program })),
    ...command.redirects.filter((r) => /^\d*<$/.test(r.op)).map((r) => ({ word: r.target, runs: false })),
  ];
  return words.flatMap(({ word, runs }) => {
    const rel = relativePath(word);
    return rel === undefined ? [] : [{ word: word.text, rel, runs }];
  });
}

/** `--ref=answer.txt` names `answer.txt`. */
function optionValue(word: LintWord): LintWord {
  const value = /^--?[A-Za-z][\w-]*=(.+)$/.exec(word.text)?.[1];
  return value === undefined ? word : { ...word, text: value };
}

/** The word as a task-folder relative path, or undefined when it is not one the lint can judge. */
function relativePath(word: LintWord): string | undefined {
  const text = word.text;
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

/** Paths the script itself writes: redirection targets, `-o` values, what tee/touch/mkdir/cp make. */
function producedPaths(commands: readonly LintCommand[]): Set<string> {
  const produced = new Set<string>();
  const add = (word: LintWord | undefined): void => {
    const rel = word ? relativePath(word) : undefined;
    if (rel !== undefined) produced.add(rel);
  };
  for (const command of commands) {
    for (const redirect of command.redirects) if (redirect.op.includes(">")) add(redirect.target);
    const { words } = command;
    words.forEach((word, k) => {
      if (OUTPUT_OPTION.test(word.text)) add(words[k + 1]);
      const value = OUTPUT_OPTION_VALUE.exec(word.text)?.[1];
      if (value !== undefined) add({ ...word, text: value });
    });
    const at = programIndex(words);
    const program = posix.basename(words[at]?.text ?? "");
    const files = words.slice(at + 1).filter((w) => !w.text.startsWith("-"));
    if (CREATE_ALL.has(program) || BUILD_TARGETS.has(program)) files.forEach(add);
    if (CREATE_LAST.has(program)) add(files.at(-1));
  }
  return produced;
}

/** The base name of the program a command runs: past assignments and wrappers with their options. */
function programOf(words: readonly LintWord[]): string {
  return posix.basename(words[programIndex(words)]?.text ?? "");
}

function programIndex(words: readonly LintWord[]): number {
  let k = 0;
  while (k < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[k]?.text ?? "")) k++;
  while (WRAPPERS.has(posix.basename(words[k]?.text ?? ""))) {
    k++;
    while (k < words.length && /^-|^\d+[smhd]?$|^[A-Za-z_][A-Za-z0-9_]*=/.test(words[k]?.text ?? "")) k++;
  }
  return k;
}
