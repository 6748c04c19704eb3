// A run stage that runs the agent's code and then a judging check asset in one script: whatever the
// judge decides is then the agent's to forge (a process its code left behind rewrites the judge's
// exit status, a file it swapped is what the judge reads). `scifi validate` warns and points to
// the compare stage (docs/loop.md, Checks in stages). A lint of the text, like the compare-stage
// lint in parse.ts: it sees what a script names, not what a program it starts does.
import { lstatSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { programKind } from "./program-kinds.ts";

/** Programs that build or run what they are given: in a run stage, the agent's code. */
const BUILDERS =
  /^(make|gmake|cmake|ninja|meson|gcc|g\+\+|cc|c\+\+|clang|clang\+\+|gfortran|f95|mpif90|mpicc|nvcc|verilator|iverilog|vvp|javac|java|go|cargo|rustc|pytest|py\.test|ctest|root|root\.exe|npm|npx)$/;
/** Tools that judge when they are given a check asset (a reference to compare with). */
const COMPARERS = /^(diff|cmp|comm|sha256sum|sha1sum|md5sum|numdiff|ndiff)$/;
/** Programs that run another program: looked through, with their own options. */
const WRAPPERS = /^(env|timeout|nice|nohup|setsid|stdbuf|command|builtin|time|xargs)$/;
/** An asset script read to look inside it: at most this many bytes. */
const MAX_SCRIPT_BYTES = 64 * 1024;

export interface AgentThenJudge {
  /** The command that runs the agent's code. */
  agent: string;
  /** The later command that runs or uses a check asset to judge. */
  judge: string;
  /** The check asset script in which both were found, when they were found inside one. */
  inside?: string;
}

/**
 * Where `command` (a run stage's script) runs the agent's code and, later in the same script, a
 * check asset that judges; undefined when it does not. `assets` are task-folder paths; `rootDir`
 * is the task folder, used to look one level into a check asset that is a shell script.
 */
export function agentThenJudge(
  command: string,
  assets: readonly string[],
  rootDir: string,
): AgentThenJudge | undefined {
  return scan(command, assets, rootDir, 1);
}

function scan(
  command: string,
  assets: readonly string[],
  rootDir: string,
  depth: number,
): AgentThenJudge | undefined {
  let agent: string | undefined;
  for (const simple of simpleCommands(command)) {
    const words = programWords(simple);
    const role = roleOf(words, assets);
    if (role === "judge" && agent !== undefined) return { agent, judge: simple };
    if (role === "agent" && agent === undefined) agent = simple;
    const script = role === "judge" && depth > 0 ? shellScriptAsset(words, assets) : undefined;
    if (script === undefined) continue;
    // A check asset that is a shell script: what it runs counts as this stage's script.
    const inner = scan(readScript(rootDir, script), assets, rootDir, depth - 1);
    if (inner) return { ...inner, inside: script };
  }
  return undefined;
}

type Role = "agent" | "judge" | "other";

function roleOf(words: string[], assets: readonly string[]): Role {
  const first = words[0] ?? "";
  const program = first.split("/").at(-1) ?? "";
  if (isAsset(first, assets)) return "judge";
  const kind = programKind(program);
  if (kind === "shell" || kind === "interpreter") {
    const inline = words.includes("-c") || words.includes("-e") || words.includes("-m");
    const script = words.slice(1).find((w) => !w.startsWith("-"));
    if (inline || script === undefined) return "other";
    return isAsset(script, assets) ? "judge" : "agent";
  }
  if (BUILDERS.test(program)) return "agent";
  if (COMPARERS.test(program)) return words.slice(1).some((w) => isAsset(w, assets)) ? "judge" : "other";
  // A program of the task folder (`./stats`, `build/sim`): the agent's.
  return /^[\w.+-][\w.+/-]*$/.test(first) && first.includes("/") ? "agent" : "other";
}

function shellScriptAsset(words: string[], assets: readonly string[]): string | undefined {
  const program = words[0]?.split("/").at(-1) ?? "";
  if (programKind(program) !== "shell")
    return isAsset(words[0] ?? "", assets) ? normal(words[0] ?? "") : undefined;
  const script = words.slice(1).find((w) => !w.startsWith("-"));
  return script !== undefined && isAsset(script, assets) ? normal(script) : undefined;
}

function readScript(rootDir: string, rel: string): string {
  const path = join(rootDir, rel);
  try {
    // A link or anything but a small regular file is not read (validate reads the user's folder).
    const stat = lstatSync(path);
    if (!stat.isFile() || stat.size > MAX_SCRIPT_BYTES) return "";
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** A word as a task-folder path: `./x`, `/task/x` and `x` are the same file. */
function normal(word: string): string {
  const stripped = word.replace(/^["']|["']$/g, "").replace(/^\/task\//, "");
  return posix.normalize(stripped).replace(/^\.\//, "");
}

function isAsset(word: string, assets: readonly string[]): boolean {
  if (word === "" || word.startsWith("-")) return false;
  const rel = normal(word);
  return assets.includes(rel);
}

/** The simple commands of a script in order: split at newlines, `;`, `&&`, `||`, `|` and `&`. */
function simpleCommands(command: string): string[] {
  return command
    .split("\n")
    .map((line) => line.replace(/(^|\s)#.*$/, ""))
    .join("\n")
    .split(/\n|;|&&|\|\||\||&/)
    .map((c) => c.trim().replace(/^[({!]\s*|\s*[)}]$/g, ""))
    .filter(
      (c) => c !== "" && !/^(then|do|else|fi|done|esac|set\b.*|trap\b.*|[A-Za-z_][A-Za-z0-9_]*=\S*)$/.test(c),
    );
}

/** The words of a simple command from the program on: assignments, wrappers and redirections dropped. */
function programWords(simple: string): string[] {
  let words = simple
    .replace(/\d*>>?\s*&?\s*\S+|\d*<\s*\S+/g, " ")
    .split(/\s+/)
    .map((w) => w.replace(/^['"]|['"]$/g, ""))
    .filter((w) => w !== "");
  while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0] ?? "")) words = words.slice(1);
  while (WRAPPERS.test(words[0] ?? "")) {
    const rest = words.slice(1);
    const start = rest.findIndex((x) => !/^-|^\d+[smhd]?$|^[A-Za-z_][A-Za-z0-9_]*=/.test(x));
    words = start < 0 ? [] : rest.slice(start);
  }
  if (/^(if|then|do|while|until|else|elif|exec)$/.test(words[0] ?? "")) words = words.slice(1);
  return words;
}
