// The lines of a Harbor / Terminal-Bench test script that fetch or install software over the
// network (apt-get, pip, uv, uvx, curl | sh, ...). scifi's checks run without network, so each such
// command is either mapped to what the sandbox image already holds (a `uvx --with pytest pytest`
// becomes the image's `python3 -m pytest`; installing curl to install uv is dropped) or reported as
// a reason the task cannot pass here. This file only reads the script: which packages an image
// holds is asked of the image itself (image-tools.ts), and harbor.ts decides.
//
// A reader of shell lines, not a shell: commands are split at `;`, `&&`, `||`, `|`, `(`, `)`,
// quotes respected, comments and here-document bodies skipped. What it cannot read as a fetch it
// leaves alone; a fetch it cannot map is refused, never passed over. (Just over 500 lines: one reader,
// the fetch tools' grammars beside the splitter they share.)

/** Packages a mapped command needs from the image. */
export interface Needs {
  /** Python distributions, by normalised pip name (`scikit-learn`). */
  python: string[];
  /** Debian packages. */
  apt: string[];
}

export type FetchAction =
  /** Needed only to fetch (apt-get update, the uv installer): replaced by `true`. */
  | { kind: "drop"; what: string }
  /**
   * Replaced by `replace` when the image holds `needs`; when it lacks only report plugins of
   * `optional.plugins`, by `optional.replace` (their options dropped).
   */
  | {
      kind: "map";
      what: string;
      needs: Needs;
      replace: string;
      optional?: { plugins: string[]; replace: string };
    }
  /** No mapping: the task cannot pass here as written. */
  | { kind: "refuse"; what: string };

export interface Fetch {
  /** 1-based line of the command's first word. */
  line: number;
  /** Offsets in the script text of what a mapping replaces. */
  start: number;
  end: number;
  action: FetchAction;
}

interface Word {
  /** Quotes removed. */
  text: string;
  /** As written (quotes kept): what a mapping copies. */
  raw: string;
  start: number;
  end: number;
}

interface Command {
  words: Word[];
  start: number;
  end: number;
  /** The operator after the command (`|`, `&&`, `;`, ...), or "" at the end of the line. */
  next: string;
}

/** pytest plugins that only write a report: dropped with their options when the image lacks them. */
const REPORT_PLUGINS: Record<string, string[]> = { "pytest-json-ctrf": ["--ctrf"] };
/** Debian packages installed only to fetch something else (whose fetches are mapped one by one). */
const FETCH_HELPERS = new Set(
  "curl wget ca-certificates gnupg gpg python3-pip python3-venv pipx lsb-release apt-transport-https software-properties-common".split(
    " ",
  ),
);
/** Python packages installed only to install others. */
const PIP_HELPERS = new Set(["pip", "setuptools", "wheel", "uv"]);
const KEYWORDS = new Set(["if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time"]);
const PYTEST = "python3 -m pytest -p no:cacheprovider";

/** The fetches of one shell script, in order. */
export function scanFetches(text: string): Fetch[] {
  const out: Fetch[] = [];
  const state = { venv: false };
  for (const line of logicalLines(text)) {
    const commands = splitCommands(text, line.start, line.end);
    for (let i = 0; i < commands.length; i++) {
      const command = commands[i] as Command;
      const words = stripPrefix(command.words);
      if (words.length === 0) continue;
      let end = command.end;
      let action = classify(words, state);
      // `curl URL | sh`: the pipeline is one fetch.
      const piped = commands[i + 1];
      if (command.next === "|" && piped && isFetcher(words) && isShell(stripPrefix(piped.words))) {
        end = piped.end;
        i++;
        action = isUvInstaller(words)
          ? { kind: "drop", what: "the uv installer (curl | sh)" }
          : {
              kind: "refuse",
              what: `${words[0]?.text} | ${stripPrefix(piped.words)[0]?.text}: runs a script fetched from the network`,
            };
      }
      if (!action) continue;
      const first = words[0] as Word;
      out.push({ line: lineOf(text, first.start), start: first.start, end, action });
    }
  }
  return out;
}

/** `text` with each range of `replaced` replaced by its text (ranges do not overlap). */
export function applyFetches(text: string, replaced: { start: number; end: number; with: string }[]): string {
  let result = "";
  let at = 0;
  for (const r of [...replaced].sort((a, b) => a.start - b.start)) {
    result += text.slice(at, r.start) + r.with;
    at = r.end;
  }
  return result + text.slice(at);
}

function classify(all: Word[], state: { venv: boolean }): FetchAction | undefined {
  const substituted = all.find((w) => /(\$\(|`)\s*(curl|wget)\s/.test(w.text));
  if (substituted)
    return isUvInstaller([
      { ...substituted, text: /https?:\/\/\S+?(?=[\s)"'`]|$)/.exec(substituted.text)?.[0] ?? "" },
    ])
      ? { kind: "drop", what: 'the uv installer (sh -c "$(curl ...)")' }
      : { kind: "refuse", what: "a command substitution that downloads over the network" };
  const words = withoutRedirects(all);
  // pytest's arguments as written, redirections included (the mapping copies them).
  const from = (w: Word | undefined): Word[] => (w ? all.slice(all.indexOf(w)) : []);
  const [cmd = "", ...rest] = words.map((w) => w.text);
  const program = cmd.split("/").at(-1) ?? cmd;
  const args = rest.filter((a) => !a.startsWith("-"));
  const sub = args[0] ?? "";
  switch (program) {
    case "apt-get":
    case "apt":
    case "aptitude": {
      if (["update", "upgrade", "clean", "autoclean", "autoremove", "dist-upgrade"].includes(sub))
        return { kind: "drop", what: `${program} ${sub}: nothing to refresh without network` };
      if (sub !== "install") return { kind: "refuse", what: `${program} ${sub}: no mapping` };
      const packages = args.slice(1).map((p) => p.replace(/[=:].*$/, ""));
      const wanted = packages.filter((p) => !FETCH_HELPERS.has(p));
      if (wanted.length === 0)
        return { kind: "drop", what: `${program} install ${packages.join(" ")}: needed only to fetch` };
      return {
        kind: "map",
        what: `${program} install ${wanted.join(" ")}`,
        needs: { python: [], apt: wanted },
        replace: "true",
      };
    }
    case "rm":
      // apt's cache, cleaned after an install: the sandbox's root is read-only, so rm would fail.
      if (args.length > 0 && args.every((a) => /^\/var\/(lib|cache)\/apt(\/|$)/.test(a)))
        return { kind: "drop", what: "rm of apt's cache" };
      return undefined;
    case "pip":
    case "pip3":
      return pip(words.slice(1), program);
    case "python":
    case "python3":
      if (rest[0] === "-m" && (rest[1] === "pip" || rest[1] === "pip3"))
        return pip(words.slice(3), `${program} -m pip`);
      if (rest[0] === "-m" && rest[1] === "pytest") return pytest(from(words[3]), [], `${program} -m pytest`);
      if (rest[0] === "-m" && (rest[1] === "venv" || rest[1] === "virtualenv")) {
        state.venv = true;
        return { kind: "drop", what: `${program} -m venv: the image's python3 is used as is` };
      }
      return undefined;
    case "virtualenv":
      state.venv = true;
      return { kind: "drop", what: "virtualenv: the image's python3 is used as is" };
    case "pytest":
    case "py.test":
      return pytest(from(words[1]), [], program);
    case "uv":
      return uv(words.slice(1), state, from);
    case "uvx":
      return uvx(words.slice(1), "uvx", from);
    case "source":
    case ".": {
      const file = rest[0] ?? "";
      if (/(^|\/)\.(local\/bin|cargo)\/env$/.test(file))
        return {
          kind: "drop",
          what: `${program} ${file.replace(/^.*\/\.(local|cargo)/, "~/.$1")}: uv's installer's environment`,
        };
      if (state.venv && /\/bin\/activate$/.test(file))
        return { kind: "drop", what: "activating the dropped virtual environment" };
      return undefined;
    }
    case "curl":
    case "wget": {
      if (words.some((w) => /^https?:\/\/(localhost|127\.0\.0\.1)\b/.test(w.text)))
        return {
          kind: "refuse",
          what: `${program}: talks to a service at localhost (the task's other containers are not started here)`,
        };
      return { kind: "refuse", what: `${program}: downloads over the network` };
    }
    case "git":
      if (["clone", "fetch", "pull", "submodule"].includes(sub))
        return { kind: "refuse", what: `git ${sub}: fetches over the network` };
      return undefined;
    case "npm":
    case "npx":
    case "yarn":
    case "pnpm":
    case "conda":
    case "mamba":
    case "micromamba":
    case "cargo":
    case "gem":
    case "go":
    case "apk":
    case "yum":
    case "dnf":
    case "pipx":
      if (
        program === "npx" ||
        program === "pipx" ||
        /^(install|i|add|ci|create|get|update|upgrade|run)$/.test(sub)
      )
        return {
          kind: "refuse",
          what:
            `${program} ${program === "npx" ? "" : sub}`.trim() +
            ": installs software over the network; no mapping",
        };
      return undefined;
    default:
      return undefined;
  }
}

/** `pip install NAME...` (also `uv pip install`, `uv add`): the image must hold every package. */
function pip(words: Word[], how: string): FetchAction {
  const [sub, ...rest] = words.map((w) => w.text);
  if (sub !== "install" && sub !== "add")
    return { kind: "refuse", what: `${how} ${sub ?? ""}: no mapping`.trim() };
  const names: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i] as string;
    if (/^(-r|--requirement|-e|--editable|-c|--constraint)$/.test(a) || /^(-r|-e)./.test(a))
      return {
        kind: "refuse",
        what: `${how} ${sub} ${a}: packages named in a file or a source folder; no mapping`,
      };
    if (
      /^(-i|--index-url|--extra-index-url|-t|--target|--python|-p|--prefix|--root|-f|--find-links)$/.test(a)
    ) {
      i++;
      continue;
    }
    if (a.startsWith("-")) continue;
    const name = packageName(a);
    if (!name) return { kind: "refuse", what: `${how} ${sub}: a package given as a path or URL; no mapping` };
    names.push(name);
  }
  // pip, setuptools, wheel, uv: installed only to install something else.
  const wanted = names.filter((n) => !PIP_HELPERS.has(n));
  if (wanted.length === 0 && names.length > 0)
    return { kind: "drop", what: `${how} ${sub} ${names.join(" ")}: needed only to install` };
  if (wanted.length === 0) return { kind: "refuse", what: `${how} ${sub} with no package named: no mapping` };
  const plugins = wanted.filter((n) => n in REPORT_PLUGINS);
  return {
    kind: "map",
    what: `${how} ${sub} ${wanted.join(" ")}`,
    needs: { python: wanted, apt: [] },
    replace: "true",
    ...(plugins.length ? { optional: { plugins, replace: "true" } } : {}),
  };
}

type From = (w: Word | undefined) => Word[];

function uv(words: Word[], state: { venv: boolean }, from: From): FetchAction {
  const sub = words[0]?.text ?? "";
  if (sub === "venv") {
    state.venv = true;
    return { kind: "drop", what: "uv venv: the image's python3 is used as is" };
  }
  if (sub === "init") return { kind: "drop", what: "uv init: no project needed for the image's python3" };
  if (sub === "pip") return pip(words.slice(1), "uv pip");
  if (sub === "add") return pip(words, "uv");
  if (sub === "tool" && words[1]?.text === "run") return uvx(words.slice(2), "uv tool run", from);
  if (sub === "run") return uvx(words.slice(1), "uv run", from);
  return { kind: "refuse", what: `uv ${sub}: no mapping` };
}

/** `uvx [--with P]... TOOL ARGS` / `uv run [--with P]... CMD ARGS`: the image's python3 runs it. */
function uvx(words: Word[], how: string, from: From): FetchAction {
  const withs: string[] = [];
  let i = 0;
  for (; i < words.length; i++) {
    const a = (words[i] as Word).text;
    const eq = /^(--with|-w|--from)=(.*)$/.exec(a);
    if (eq) {
      withs.push(...(eq[2] as string).split(","));
      continue;
    }
    if (a === "--with" || a === "-w" || a === "--from") {
      withs.push(...(words[++i]?.text ?? "").split(","));
      continue;
    }
    if (/^(-p|--python|--directory|--project|--env-file|--index|--index-url)$/.test(a)) {
      i++;
      continue;
    }
    if (!a.startsWith("-")) break;
  }
  const names = withs.map(packageName);
  if (names.some((n) => !n)) return { kind: "refuse", what: `${how} --with a path or URL: no mapping` };
  const extra = names as string[];
  const tool = words[i]?.text ?? "";
  const after = from(words[i + 1]);
  if (tool === "pytest" || tool === "py.test" || /^pytest[=<>@]/.test(tool))
    return pytest(after, extra, `${how} pytest`);
  if ((tool === "python" || tool === "python3") && after[0]?.text === "-m" && after[1]?.text === "pytest")
    return pytest(after.slice(2), extra, `${how} python -m pytest`);
  if (how === "uv run" && (tool === "python" || tool === "python3" || /\.py$/.test(tool))) {
    const args = (/\.py$/.test(tool) ? from(words[i]) : after).map((w) => w.raw).join(" ");
    return {
      kind: "map",
      what: `${how} ${tool}${extra.length ? ` with ${extra.join(" ")}` : ""} -> the image's python3`,
      needs: { python: extra, apt: [] },
      replace: `python3 ${args}`.trim(),
    };
  }
  return { kind: "refuse", what: `${how} ${tool}: no mapping to the image's tools` };
}

/** The words without redirections (`> log`, `2>/dev/null`, `&>x`) and their targets. */
function withoutRedirects(words: Word[]): Word[] {
  const out: Word[] = [];
  for (let i = 0; i < words.length; i++) {
    const t = (words[i] as Word).text;
    if (/^(\d*|&)(>>?|<)&?$/.test(t)) i++;
    else if (!/^(\d*|&)(>>?|<)/.test(t)) out.push(words[i] as Word);
  }
  return out;
}

/** pytest with its arguments as written; report-only plugins may be dropped with their options. */
function pytest(args: Word[], extra: string[], how: string): FetchAction {
  // A report plugin is needed when named (`--with`) or when its option is used (installed earlier
  // by a `pip install` / `uv add`); lacking it, its options are dropped.
  const used = Object.entries(REPORT_PLUGINS)
    .filter(
      ([plugin, options]) =>
        extra.includes(plugin) ||
        args.some((a) => options.some((o) => a.text === o || a.text.startsWith(`${o}=`))),
    )
    .map(([plugin]) => plugin);
  const python = [
    ...new Set(["pytest", ...extra.filter((n) => n !== "pytest" && !PIP_HELPERS.has(n)), ...used]),
  ];
  const dropped = used.flatMap((p) => REPORT_PLUGINS[p] ?? []);
  const plugins = python.slice(1);
  return {
    kind: "map",
    what: `${how}${plugins.length ? ` with ${plugins.join(" ")}` : ""} -> the image's pytest`,
    needs: { python, apt: [] },
    replace: `${PYTEST} ${args.map((w) => w.raw).join(" ")}`.trim(),
    ...(used.length
      ? { optional: { plugins: used, replace: `${PYTEST} ${withoutOptions(args, dropped)}`.trim() } }
      : {}),
  };
}

/** The arguments without `--opt VALUE` / `--opt=VALUE` for each option named. */
function withoutOptions(args: Word[], options: string[]): string {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = (args[i] as Word).text;
    if (options.includes(a)) {
      i++;
      continue;
    }
    if (options.some((o) => a.startsWith(`${o}=`))) continue;
    kept.push((args[i] as Word).raw);
  }
  return kept.join(" ");
}

/** A pip requirement's normalised name (`Scikit_Learn[x]==1.0` -> `scikit-learn`), or "" for a path or URL. */
function packageName(spec: string): string {
  if (/[/:]/.test(spec.replace(/[=<>!~;].*$/, ""))) return "";
  const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(spec);
  return m ? (m[1] as string).toLowerCase().replace(/[._]+/g, "-") : "";
}

const isFetcher = (words: Word[]): boolean => ["curl", "wget"].includes(words[0]?.text ?? "");
const isShell = (words: Word[]): boolean =>
  /^(\/(usr\/)?bin\/)?(sh|bash|dash|zsh)$/.test(words[0]?.text ?? "");
const isUvInstaller = (words: Word[]): boolean =>
  words.some((w) => /^https?:\/\/astral\.sh\/uv\/(\d[\w.]*\/)?install\.sh$/.test(w.text));

/** Words after env assignments, `sudo` / `env` / `command` / `exec` and shell keywords. */
function stripPrefix(words: Word[]): Word[] {
  let i = 0;
  let wrapped = false;
  while (i < words.length) {
    const t = (words[i] as Word).text;
    if (KEYWORDS.has(t) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(t)) i++;
    else if (["sudo", "env", "exec", "nohup"].includes(t)) {
      wrapped = true;
      i++;
    } else if (wrapped && t.startsWith("-"))
      i++; // `sudo -E apt-get`: the wrapper's own options
    else break;
  }
  return words.slice(i);
}

/** Lines joined at trailing backslashes, without comments' lines and here-document bodies. */
function logicalLines(text: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  const lines = text.split("\n");
  let offset = 0;
  let heredoc: { tag: string; dash: boolean } | undefined;
  let open: number | undefined;
  for (const line of lines) {
    const start = offset;
    offset += line.length + 1;
    if (heredoc) {
      const body = heredoc.dash ? line.replace(/^\t+/, "") : line;
      if (body.replace(/\r$/, "") === heredoc.tag) heredoc = undefined;
      continue;
    }
    if (open === undefined) open = start;
    if (/\\\r?$/.test(line)) continue;
    out.push({ start: open, end: start + line.length });
    const here = /<<(-?)\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2/.exec(text.slice(open, start + line.length));
    if (here) heredoc = { tag: here[3] as string, dash: here[1] === "-" };
    open = undefined;
  }
  if (open !== undefined) out.push({ start: open, end: text.length });
  return out;
}

/** The commands of text[start, end), each with its words and the operator after it. */
function splitCommands(text: string, start: number, end: number): Command[] {
  const commands: Command[] = [];
  let words: Word[] = [];
  let word: Word | undefined;
  let cmdStart = start;
  const finish = (next: string) => {
    if (word) words.push(word);
    word = undefined;
    const last = words.at(-1);
    if (last) commands.push({ words, start: cmdStart, end: last.end, next });
    words = [];
  };
  for (let i = start; i < end; i++) {
    const c = text[i] as string;
    if (c === "\\" && text[i + 1] === "\n") {
      if (word) words.push(word);
      word = undefined;
      i++;
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") {
      if (word) words.push(word);
      word = undefined;
      continue;
    }
    if (!word && c === "#") break;
    // `2>&1`, `&>file`: a redirection, not the `&` that ends a command.
    const redirect = c === "&" && (text[i - 1] === ">" || text[i - 1] === "<" || text[i + 1] === ">");
    const op = redirect ? undefined : /^(&&|\|\||;;|[;|&()])/.exec(text.slice(i, i + 2))?.[1];
    if (op) {
      finish(op);
      i += op.length - 1;
      cmdStart = i + 1;
      continue;
    }
    if (!word) {
      if (words.length === 0) cmdStart = i;
      word = { text: "", raw: "", start: i, end: i };
    }
    if (c === "'" || c === '"') {
      const close = text.indexOf(c, i + 1);
      const stop = close < 0 || close >= end ? end - 1 : close;
      word.text += text.slice(i + 1, stop);
      i = stop;
    } else if (c === "\\") {
      word.text += text[i + 1] ?? "";
      i++;
    } else word.text += c;
    word.raw = text.slice(word.start, i + 1);
    word.end = i + 1;
  }
  finish("");
  return commands;
}

function lineOf(text: string, offset: number): number {
  let n = 1;
  for (let i = 0; i < offset; i++) if (text[i] === "\n") n++;
  return n;
}
