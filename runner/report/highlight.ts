// Syntax highlighting of the report's diffs with highlight.js (its core and the languages scientists
// use, picked by file name). A whole text is highlighted at once (a docstring or block comment spans
// lines) and then split by line. The library's markup never reaches the page as it is: it is parsed
// back into tokens (text and scope names) and anything but its own <span class="..."> and escaped
// text makes the text plain; the renderer escapes every token again (runner/report/changes-html.ts).
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cmake from "highlight.js/lib/languages/cmake";
import cpp from "highlight.js/lib/languages/cpp";
import fortran from "highlight.js/lib/languages/fortran";
import ini from "highlight.js/lib/languages/ini";
import json from "highlight.js/lib/languages/json";
import julia from "highlight.js/lib/languages/julia";
import makefile from "highlight.js/lib/languages/makefile";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import r from "highlight.js/lib/languages/r";
import verilog from "highlight.js/lib/languages/verilog";
import yaml from "highlight.js/lib/languages/yaml";

const LANGUAGES = {
  bash,
  c,
  cmake,
  cpp,
  fortran,
  ini,
  json,
  julia,
  makefile,
  markdown,
  python,
  r,
  verilog,
  yaml,
};
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

export type Language = keyof typeof LANGUAGES;

const BY_EXTENSION: Record<string, Language> = {
  py: "python",
  pyi: "python",
  pyw: "python",
  f: "fortran",
  for: "fortran",
  ftn: "fortran",
  f77: "fortran",
  f90: "fortran",
  f95: "fortran",
  f03: "fortran",
  f08: "fortran",
  c: "c",
  h: "c",
  cc: "cpp",
  cpp: "cpp",
  cxx: "cpp",
  hh: "cpp",
  hpp: "cpp",
  hxx: "cpp",
  cu: "cpp",
  cuh: "cpp",
  v: "verilog",
  vh: "verilog",
  sv: "verilog",
  svh: "verilog",
  sh: "bash",
  bash: "bash",
  zsh: "bash",
  json: "json",
  ipynb: "json",
  yaml: "yaml",
  yml: "yaml",
  md: "markdown",
  markdown: "markdown",
  r: "r",
  jl: "julia",
  mk: "makefile",
  mak: "makefile",
  cmake: "cmake",
  ini: "ini",
  cfg: "ini",
  toml: "ini",
};

const BY_NAME: Record<string, Language> = {
  makefile: "makefile",
  gnumakefile: "makefile",
  "cmakelists.txt": "cmake",
};

/** The language of a file by its name, or undefined (plain text). */
export function languageOf(path: string): Language | undefined {
  const name = (path.slice(path.lastIndexOf("/") + 1) || path).toLowerCase();
  if (Object.hasOwn(BY_NAME, name)) return BY_NAME[name];
  const dot = name.lastIndexOf(".");
  if (dot <= 0) return undefined;
  const ext = name.slice(dot + 1);
  return Object.hasOwn(BY_EXTENSION, ext) ? BY_EXTENSION[ext] : undefined;
}

/** A piece of a highlighted line: text, or a scope (highlight.js class names) around pieces. */
export type Segment = string | { scope: string; children: Segment[] };

/** Source lines longer than this are cut (with "…") before highlighting, as plain diff lines are. */
export const MAX_LINE_CHARS = 2000;

const ENTITY: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#x27": "'", "#39": "'" };
const SCOPE = /^[A-Za-z0-9_\- ]{1,80}$/;

/**
 * `text` highlighted as `language`, one segment list per line (split like the diff splits: a final
 * newline ends the last line). Undefined when the library failed or produced markup other than its
 * own spans and escaped text: the caller then shows the text plain.
 */
export function highlightLines(text: string, language: Language): Segment[][] | undefined {
  const source = text
    .split("\n")
    .map((line) => (line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line))
    .join("\n");
  let markup: string;
  try {
    markup = hljs.highlight(source, { language, ignoreIllegals: true }).value;
  } catch {
    return undefined;
  }
  const lines: Segment[][] = [[]];
  // The open scopes: each line starts with the scopes the previous one left open.
  let stack: { scope: string; children: Segment[] }[] = [];
  const current = (): Segment[] => stack.at(-1)?.children ?? (lines.at(-1) as Segment[]);
  const open = (scope: string): void => {
    const node = { scope, children: [] as Segment[] };
    current().push(node);
    stack.push(node);
  };
  for (const m of markup.matchAll(/<span class="([^"<>]*)">|<\/span>|\n|[^<\n]+|</g)) {
    const [token, scope] = m;
    if (scope !== undefined) {
      if (!SCOPE.test(scope)) return undefined;
      open(scope);
    } else if (token === "</span>") {
      if (stack.length === 0) return undefined;
      stack.pop();
    } else if (token === "\n") {
      const scopes = stack.map((node) => node.scope);
      lines.push([]);
      stack = [];
      for (const scope of scopes) open(scope);
    } else if (token === "<") {
      return undefined;
    } else {
      const plain = unescapeText(token);
      if (plain === undefined) return undefined;
      current().push(plain);
    }
  }
  if (stack.length > 0) return undefined;
  if (text.endsWith("\n")) lines.pop();
  return text === "" ? [] : lines;
}

/** highlight.js's escaped text back to text (the renderer escapes it again); undefined for markup. */
function unescapeText(text: string): string | undefined {
  if (text.includes(">")) return undefined;
  let bad = false;
  const plain = text.replace(/&([#a-z0-9]+);/gi, (_, name: string) => {
    const value = ENTITY[name];
    if (value === undefined) bad = true;
    return value ?? "";
  });
  return bad || text.replace(/&([#a-z0-9]+);/gi, "").includes("&") ? undefined : plain;
}
