// The simple commands of a check's script, as `scifi validate`'s lints of compare stages read them:
// words with their quotes removed, redirections, comments and here-document bodies left out. A
// lint, not a shell: a word whose value only the running shell knows (a variable, a substitution,
// a glob) is marked so, and no rule decides anything from it.

/** One word of a command: its text with quotes removed, and whether the shell would rewrite it. */
export interface LintWord {
  text: string;
  /** Holds `$`, a backtick substitution or an unquoted glob: its value is known only at run time. */
  expands: boolean;
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

/** The simple commands of `script`, in order (a `for`/`case` header is not a command). */
export function lintCommands(script: string): LintCommand[] {
  const commands: LintCommand[] = [];
  let current: LintCommand = { words: [], redirects: [] };
  const tokens = tokenize(script);
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    if (token.kind === "op" && SEPARATORS.has(token.op)) {
      if (current.words.length > 0 || current.redirects.length > 0) commands.push(current);
      current = { words: [], redirects: [] };
    } else if (token.kind === "op") {
      const next = tokens[i + 1];
      if (next?.kind === "word") {
        current.redirects.push({ op: token.op, target: next.word });
        i++;
      }
    } else if (!(current.words.length === 0 && KEYWORDS.has(token.word.text))) {
      current.words.push(token.word);
    }
  }
  if (current.words.length > 0 || current.redirects.length > 0) commands.push(current);
  // `for x in a b c` and `case w in` name no program and their words are not paths read.
  return commands.filter((c) => !["for", "case", "esac", "select"].includes(c.words[0]?.text ?? ""));
}

/** Words and operators; comments and here-document bodies are skipped. */
function tokenize(script: string): Token[] {
  const tokens: Token[] = [];
  /** Here-document delimiters waiting for the end of the current line. */
  const heredocs: { delimiter: string; strip: boolean }[] = [];
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
        heredocs.push({ delimiter: word.word.text, strip: op === "<<-" });
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

/** Past the bodies of the here-documents opened on the line that just ended. */
function skipHeredocs(
  script: string,
  from: number,
  pending: { delimiter: string; strip: boolean }[],
): number {
  let at = from;
  for (const { delimiter, strip } of pending) {
    while (at < script.length) {
      const end = script.indexOf("\n", at);
      const line = script.slice(at, end === -1 ? script.length : end);
      at = end === -1 ? script.length : end + 1;
      if ((strip ? line.replace(/^\t+/, "") : line) === delimiter) break;
    }
  }
  return at;
}

/** One word from `start`: quotes removed, `$(...)` and backticks consumed whole. */
function readWord(script: string, start: number): { word: LintWord; end: number } {
  let text = "";
  let expands = false;
  let i = start;
  while (i < script.length) {
    const c = script[i] as string;
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
      if (/[$`]/.test(inner)) expands = true;
      text += inner.replace(/\\([$`"\\])/g, "$1");
      i = end + 1;
    } else if (c === "$" && script[i + 1] === "(") {
      expands = true;
      i = balanced(script, i + 1);
    } else if (c === "`") {
      expands = true;
      i = closing(script, i + 1, "`") + 1;
    } else {
      if (/[$*?[{~]/.test(c)) expands = true;
      text += c;
      i++;
    }
  }
  return { word: { text, expands }, end: i };
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
