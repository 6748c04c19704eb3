// The simple commands of a check's script, as `scifi validate`'s lints of compare stages read them:
// words with their quotes removed, redirections, comments and here-document bodies left out. A
// lint, not a shell: a word whose value only the running shell knows (a variable, a substitution,
// a glob) is marked so, and no rule decides anything from it. The commands inside `$(...)` and
// backticks, function bodies and subshells are commands too (a substitution's before the command
// that holds it, as the shell runs them), and a `for` list is a command of its own (`for`, then the
// words of its list), so a read is seen wherever it hides. A `case` pattern list is no command;
// the script of `eval`, `sh -c` and a here-document a shell reads are commands too.
import { programKind } from "./program-kinds.ts";

/** One word of a command: its text with quotes removed, and whether the shell would rewrite it. */
export interface LintWord {
  text: string;
  /** Holds `$`, a backtick substitution or an unquoted glob: its value is known only at run time. */
  expands: boolean;
  /** The scripts of the command substitutions in it (`$(...)`, backticks), well closed ones only. */
  substitutions?: string[];
  /** A here-document's delimiter word: the body it opens (read as commands when a shell reads it). */
  body?: string;
}

/** A redirection: its operator (`>`, `>>`, `<`, `2>`, `&>`, `<<<` …) and target word. */
export interface LintRedirect {
  op: string;
  target: LintWord;
}

/** One simple command: its words (keywords such as `if`, `then`, `!` removed) and redirections. */
export interface LintCommand {
  words: LintWord[];
  redirects: LintRedirect[];
  /** A `for`/`select` list (`for` and its words): the loop variable (its uses say if the list is read). */
  loop?: string;
  /** The scripts it hands to a shell (`eval`, `sh -c`, a here-document a shell reads), as written. */
  scripts?: string[];
}

type Token = { kind: "word"; word: LintWord } | { kind: "op"; op: string };

/**
 * Programs that run the command after their own options (`timeout 10 cmd`, `env X=1 cmd`): the
 * compare-stage lints look through them to the program they run.
 */
export const WRAPPERS: ReadonlySet<string> = new Set(
  "env timeout nice nohup setsid stdbuf command builtin time xargs ionice taskset flock valgrind busybox".split(
    " ",
  ),
);

/** A wrapper's options that take the next word as their value, and its operands before the program. */
const WRAPPER_SPECS: Readonly<Record<string, { values: readonly string[]; operands?: number }>> = {
  xargs: { values: ["-a", "-E", "-I", "-d", "-n", "-L", "-P", "-s", "--arg-file", "--delimiter"] },
  flock: { values: ["-w", "-E", "--timeout", "--conflict-exit-code"], operands: 1 },
  taskset: { values: [], operands: 1 },
  timeout: { values: ["-s", "-k", "--signal", "--kill-after"], operands: 1 },
  nice: { values: ["-n", "--adjustment"] },
  ionice: { values: ["-c", "-n", "-p", "--class", "--classdata"] },
  stdbuf: { values: ["-i", "-o", "-e"] },
  env: { values: ["-u", "-C", "-S", "--unset", "--chdir"] },
  time: { values: ["-f", "-o", "--format", "--output"] },
};

/**
 * Where the program a command runs stands: past `name=value` assignments and wrappers with their
 * options, option values (`xargs -a FILE`, `nice -n 5`) and leading operands (`flock FILE`,
 * `timeout 10`). `creates`: the words a wrapper creates (flock's lock file).
 */
export function wrappedProgram(words: readonly string[]): { at: number; creates: number[] } {
  const base = (k: number) => (words[k] ?? "").split("/").at(-1) ?? "";
  const creates: number[] = [];
  let k = 0;
  while (k < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[k] ?? "")) k++;
  while (WRAPPERS.has(base(k))) {
    const spec = WRAPPER_SPECS[base(k)] ?? { values: [] };
    const wrapper = base(k);
    k++;
    let operands = spec.operands ?? 0;
    while (k < words.length) {
      const word = words[k] ?? "";
      if (word === "--") k++;
      else if (spec.values.includes(word)) k += 2;
      else if (/^-|^[A-Za-z_][A-Za-z0-9_]*=/.test(word) || (operands === 0 && /^\d+[smhd]?$/.test(word))) k++;
      else if (operands > 0) {
        if (wrapper === "flock" && !/^\d+$/.test(word)) creates.push(k);
        operands--;
        k++;
      } else break;
      if (word === "--") break;
    }
  }
  return { at: k, creates };
}

const OPERATOR_START = new Set(["<", ">", "&", "|", ";", "(", ")"]);
/** Characters that end an unquoted word. */
const WORD_END = new Set([" ", "\t", "\n", "\r", "\v", "\f", ";", "&", "|", "(", ")", "<", ">"]);

/** Operators that end a simple command. */
const SEPARATORS = new Set(["&&", "||", ";", ";;", "|", "|&", "&", "\n", "(", ")"]);
/** Reserved words that may stand before a command and are not its program. */
const KEYWORDS = new Set(["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}"]);
const OPERATORS = [
  "<<<",
  "<<-",
  "&>>",
  ">>",
  "<<",
  "&>",
  ">|",
  ">&",
  "<&",
  "&&",
  "||",
  "|&",
  ";;",
  "<",
  ">",
  "|",
  "&",
  ";",
  "(",
  ")",
];

/** How deep substitutions inside substitutions are read (each level reads its text once more). */
const MAX_DEPTH = 6;

/**
 * The simple commands of `script`, in order: a substitution's commands before the command holding
 * it; a function's body where it is defined (its definition's name is no command); a `for` or
 * `select` list as the command `for <words>`; a `case` header is no command.
 */
export function lintCommands(script: string, depth = 0): LintCommand[] {
  const commands: LintCommand[] = [];
  let current: LintCommand = { words: [], redirects: [] };
  /** Here-document bodies piped into the command being read (`cat <<EOF | sh`). */
  let piped: string[] = [];
  /** Open `case`s, innermost last: true while a pattern list (`x)`, `(x|y)`) is expected. */
  const cases: boolean[] = [];
  const flush = (): void => {
    if (current.words.length === 0 && current.redirects.length === 0) return;
    let scripts: string[] = [];
    if (depth < MAX_DEPTH) {
      for (const word of [...current.words, ...current.redirects.map((r) => r.target)])
        for (const inner of word.substitutions ?? []) commands.push(...lintCommands(inner, depth + 1));
      scripts = shellScripts(current, piped);
      for (const inner of scripts) commands.push(...lintCommands(inner, depth + 1));
    }
    const command = header(current);
    if (command) commands.push(scripts.length > 0 ? { ...command, scripts } : command);
  };
  const tokens = tokenize(script);
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    const next = tokens[i + 1];
    if (cases.at(-1) === true) {
      // A pattern list is no command: skip to its `)`; `esac` closes the case.
      if (token.kind === "word" && token.word.text === "esac") cases.pop();
      else if (token.kind === "op" && token.op === ")") cases[cases.length - 1] = false;
      continue;
    }
    if (token.kind === "word" && current.words.length === 0 && token.word.text === "case") {
      // `case WORD in`: the word's substitutions are read (flush), then pattern lists follow.
      current.words.push(token.word);
      if (next?.kind === "word") current.words.push(next.word);
      i += next?.kind === "word" && tokens[i + 2]?.kind === "word" ? 2 : 1;
      flush();
      current = { words: [], redirects: [] };
      cases.push(true);
    } else if (token.kind === "word" && current.words.length === 0 && token.word.text === "esac") {
      cases.pop();
    } else if (token.kind === "op" && token.op === ";;" && cases.length > 0) {
      flush();
      current = { words: [], redirects: [] };
      piped = [];
      cases[cases.length - 1] = true;
    } else if (token.kind === "word" && current.words.length === 0 && token.word.text === "function") {
      // `function name { ...; }`: the name is no command; the body follows as commands.
      i++;
      const [open, close] = [tokens[i + 1], tokens[i + 2]];
      if (open?.kind === "op" && open.op === "(" && close?.kind === "op" && close.op === ")") i += 2;
    } else if (
      token.kind === "op" &&
      token.op === "(" &&
      next?.kind === "op" &&
      next.op === ")" &&
      current.words.length === 1 &&
      current.redirects.length === 0
    ) {
      // `name() { ...; }`: a function definition, not a command named `name`.
      current = { words: [], redirects: [] };
      i++;
    } else if (token.kind === "op" && SEPARATORS.has(token.op)) {
      flush();
      // A pipe's newline (`cat <<EOF |` then `sh` on the next line) keeps what is piped.
      if (current.words.length > 0 || current.redirects.length > 0) {
        const bodies = current.redirects.flatMap((r) => (r.target.body === undefined ? [] : [r.target.body]));
        piped = token.op === "|" || token.op === "|&" ? bodies : [];
      }
      current = { words: [], redirects: [] };
    } else if (token.kind === "op") {
      if (next?.kind === "word") {
        current.redirects.push({ op: token.op, target: next.word });
        i++;
      }
    } else if (!(current.words.length === 0 && KEYWORDS.has(token.word.text))) {
      current.words.push(token.word);
    }
  }
  flush();
  return commands;
}

/**
 * The scripts a command hands to a shell, read as commands of their own: `eval`'s arguments,
 * `sh -c SCRIPT`, and a here-document a shell reads as its input (`sh <<EOF`, `cat <<EOF | sh`).
 * The text as written: what a variable in it holds at run time is not judged.
 */
function shellScripts(command: LintCommand, piped: readonly string[]): string[] {
  const words = command.words.map((w) => w.text);
  const { at } = wrappedProgram(words);
  const program = (words[at] ?? "").split("/").at(-1) ?? "";
  if (program === "eval") return [words.slice(at + 1).join(" ")];
  if (programKind(program) !== "shell") return [];
  const rest = words.slice(at + 1);
  const inline = rest.findIndex((w) => /^-[A-Za-z]*c[A-Za-z]*$/.test(w));
  if (inline >= 0) {
    const script = rest.slice(inline + 1).find((w) => !w.startsWith("-") || w.includes(" "));
    return script === undefined ? [] : [script];
  }
  // With no script file operand, the shell reads its program from its input.
  if (rest.some((w) => !w.startsWith("-"))) return [];
  const own = command.redirects.flatMap((r) => (r.target.body === undefined ? [] : [r.target.body]));
  return [...own, ...piped];
}

/**
 * A command as the lints read it: `for x in a b` is `for a b` (the loop reads its list's words);
 * a `case w in` header and `esac` are none (patterns are no paths).
 */
function header(command: LintCommand): LintCommand | undefined {
  const first = command.words[0]?.text ?? "";
  if (first === "case" || first === "esac") return undefined;
  if (first !== "for" && first !== "select") return command;
  const list = command.words[2]?.text === "in" ? command.words.slice(3) : [];
  const loop = command.words[1]?.text ?? "";
  return { words: [{ text: "for", expands: false }, ...list], redirects: command.redirects, loop };
}

/** Words and operators; comments and here-document bodies are skipped. */
function tokenize(script: string): Token[] {
  const tokens: Token[] = [];
  /** Here-document delimiters waiting for the end of the current line. */
  const heredocs: Heredoc[] = [];
  let i = 0;
  while (i < script.length) {
    const c = script[i] as string;
    if (c === "\n") {
      tokens.push({ kind: "op", op: "\n" });
      i = skipHeredocs(script, i + 1, heredocs.splice(0));
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") {
      i++;
      continue;
    }
    if (c === "\\" && script[i + 1] === "\n") {
      i += 2;
      continue;
    }
    if (c === "#") {
      while (i < script.length && script[i] !== "\n") i++;
      continue;
    }
    const op = operatorAt(script, i);
    if (op) {
      tokens.push({ kind: "op", op });
      i += op.length;
      if (op === "<<" || op === "<<-") {
        const word = readWord(script, skipBlanks(script, i));
        heredocs.push({ delimiter: word.word.text, strip: op === "<<-", word: word.word });
        tokens.push({ kind: "word", word: word.word });
        i = word.end;
      }
      continue;
    }
    const word = readWord(script, i);
    // `2>` and `2>&1`: a file descriptor number in front of a redirection belongs to it.
    const next = operatorAt(script, word.end);
    if (/^\d+$/.test(word.word.text) && next && /^[<>]/.test(next)) {
      tokens.push({ kind: "op", op: `${word.word.text}${next}` });
      i = word.end + next.length;
      continue;
    }
    tokens.push({ kind: "word", word: word.word });
    i = word.end;
  }
  return tokens;
}

function operatorAt(script: string, i: number): string | undefined {
  if (!OPERATOR_START.has(script[i] ?? "")) return undefined;
  return OPERATORS.find((op) => script.startsWith(op, i));
}

function skipBlanks(script: string, i: number): number {
  let at = i;
  while (script[at] === " " || script[at] === "\t") at++;
  return at;
}

/** A here-document waiting for the end of its line: its delimiter and the word that keeps its body. */
interface Heredoc {
  delimiter: string;
  strip: boolean;
  word: LintWord;
}

/** Past the bodies of the here-documents opened on the line that just ended. */
function skipHeredocs(script: string, from: number, pending: Heredoc[]): number {
  let at = from;
  for (const { delimiter, strip, word } of pending) {
    const lines: string[] = [];
    while (at < script.length) {
      const end = script.indexOf("\n", at);
      const line = script.slice(at, end === -1 ? script.length : end);
      at = end === -1 ? script.length : end + 1;
      if ((strip ? line.replace(/^\t+/, "") : line) === delimiter) break;
      lines.push(line);
    }
    // Kept on the delimiter word, for a shell that reads it as its program (shellScripts).
    word.body = lines.join("\n");
  }
  return at;
}

/** One word from `start`: quotes removed, `$(...)` and backticks consumed whole. */
function readWord(script: string, start: number): { word: LintWord; end: number } {
  let text = "";
  let expands = false;
  const substitutions: string[] = [];
  let i = start;
  while (i < script.length) {
    const c = script[i] as string;
    if (c === "(" && /^[A-Za-z_][A-Za-z0-9_]*\+?=$/.test(text) && script.slice(start, i) === text) {
      // `name=(a b)`: an array's values, not a subshell; what it holds is known only at run time.
      const end = balanced(script, i);
      substitutions.push(...substitutionsIn(script.slice(i + 1, end - 1)));
      text += script.slice(i, end);
      expands = true;
      i = end;
      continue;
    }
    if (WORD_END.has(c)) break;
    if (c === "\\") {
      text += script[i + 1] ?? "";
      i += 2;
    } else if (c === "'") {
      const end = closing(script, i + 1, "'");
      text += script.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      const end = closing(script, i + 1, '"');
      const inner = script.slice(i + 1, end);
      if (/[$`]/.test(inner)) {
        expands = true;
        substitutions.push(...substitutionsIn(inner));
      }
      text += inner.replace(/\\([$`"\\])/g, "$1");
      i = end + 1;
    } else if (c === "$" && script[i + 1] === "(") {
      expands = true;
      const end = balanced(script, i + 1);
      // `$((...))` is arithmetic, and an unclosed `$(` is no script the shell would run.
      if (script[i + 2] !== "(" && script[end - 1] === ")") substitutions.push(script.slice(i + 2, end - 1));
      i = end;
    } else if (c === "`") {
      expands = true;
      const end = closing(script, i + 1, "`");
      if (end < script.length) substitutions.push(script.slice(i + 1, end));
      i = end + 1;
    } else {
      if (/[$*?[{~]/.test(c)) expands = true;
      text += c;
      i++;
    }
  }
  const word: LintWord = substitutions.length > 0 ? { text, expands, substitutions } : { text, expands };
  return { word, end: i };
}

/** The scripts of the well closed substitutions in a double-quoted text (`"$(cat x)"`, `"`cat x`"`). */
function substitutionsIn(quoted: string): string[] {
  const found: string[] = [];
  for (let i = 0; i < quoted.length; i++) {
    if (quoted[i] === "\\") i++;
    else if (quoted[i] === "$" && quoted[i + 1] === "(") {
      const end = balanced(quoted, i + 1);
      if (quoted[i + 2] !== "(" && quoted[end - 1] === ")") found.push(quoted.slice(i + 2, end - 1));
      i = end - 1;
    } else if (quoted[i] === "`") {
      const end = closing(quoted, i + 1, "`");
      if (end < quoted.length) found.push(quoted.slice(i + 1, end).replace(/\\([$`\\])/g, "$1"));
      i = end;
    }
  }
  return found;
}

/** Index of the closing quote (honouring backslashes except in single quotes), or the end. */
function closing(script: string, from: number, quote: string): number {
  let i = from;
  while (i < script.length && script[i] !== quote) i += quote !== "'" && script[i] === "\\" ? 2 : 1;
  return Math.min(i, script.length);
}

/** Index just past the `)` that closes the `(` at `open`. */
function balanced(script: string, open: number): number {
  let depth = 0;
  for (let i = open; i < script.length; i++) {
    if (script[i] === "(") depth++;
    else if (script[i] === ")" && --depth === 0) return i + 1;
  }
  return script.length;
}
