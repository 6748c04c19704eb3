// The program rules of the command allowlist: a listed program runs, and a program that runs code
// given to it is followed into that code when the allowlist can read it (`sh -c '...'`, `eval`,
// `trap`, the command of env/timeout/nice/xargs/find -exec...) and refused when it cannot (script
// files, standard input, interpreters of other languages, login and interactive shells, compiler
// plugins). The shell syntax around the programs is read by runner/tools/allowlist.ts.
import { basename } from "node:path";
import { programKind } from "../sam/program-kinds.ts";
import { ARITHMETIC_VARIABLE, type Check, MAX_DEPTH, refuse, type Tail } from "./allowlist-check.ts";
import { type ParsedOptions, parseOptions, WRAPPERS, XARGS } from "./allowlist-options.ts";
import { type Arg, knownArg, refusedName, unknown, writableName } from "./allowlist-words.ts";

/** Checks one command's words: the program must be listed, and what it runs must be checkable. */
export function checkArgv(args: readonly Arg[], check: Check, tail: Tail): undefined {
  const name = programName(args[0], check);
  if (name === undefined) return;
  check.programs.push(name);
  const rest = args.slice(1);
  const kind = programKind(name);
  const base = basename(name);
  if (kind === "shell") return checkShell(name, rest, check);
  if (kind === "interpreter") return checkInterpreter(name, rest, check, tail);
  if (kind === "unchecked-runner") {
    check.refusals.push(
      `'${name}' runs other programs in ways the allowlist does not read, so it is refused under an allowlist: run the program itself`,
    );
    return;
  }
  const special = SPECIAL[base];
  if (special) return special(name, rest, check, tail);
  if (COMPILER.test(base)) return checkCompiler(name, rest, check);
  const spec = WRAPPERS[base];
  if (spec) return checkWrapper(name, rest, check, tail);
}

/** The program's name if it may run here; otherwise records why not. */
function programName(arg: Arg | undefined, check: Check): string | undefined {
  if (!arg || arg.text === null || !arg.plain || arg.text === "") {
    check.refusals.push(
      "a command name that is not a plain word (variable, substitution, glob, quoting or backslash): write the program's name as a plain word",
    );
    return undefined;
  }
  const name = arg.text;
  if (check.allowed.includes(name)) return name;
  if (name.includes("/") && check.allowed.includes(basename(name)))
    check.unlisted.push(
      `'${name}' (a path runs only when it is on the list exactly; write the bare name '${basename(name)}' to run the installed program)`,
    );
  else check.unlisted.push(`'${name}'`);
  return undefined;
}

/** Shell options that change nothing the allowlist relies on. */
const SHELL_FLAGS = "abBCcefEhHmnpPrtTuvx";
const SHELL_LONG = new Set(["--norc", "--noprofile", "--posix", "--restricted", "--noediting", "--verbose"]);
const SHELL_REFUSED: Record<string, string> = {
  i: "-i (interactive) reads $ENV or ~/.bashrc, files the allowlist cannot read",
  l: "-l (login) reads ~/.profile and /etc/profile, files the allowlist cannot read",
  s: "-s reads the commands from standard input, which the allowlist cannot read",
  k: "-k turns arguments like PATH=... into the environment of each command",
  O: "-O sets a bash shopt (extdebug reads a debugger file)",
};
const SHELL_LONG_REFUSED: Record<string, string> = {
  "--login": SHELL_REFUSED.l ?? "",
  "--rcfile": "--rcfile reads a file the allowlist cannot read",
  "--init-file": "--init-file reads a file the allowlist cannot read",
  "--debugger": "--debugger reads a debugger file the allowlist cannot read",
};
const SHELL_INSTEAD = "write the commands as sh -c '...', or put the script's path on allow_commands";

/** A shell runs only a `-c` script the allowlist can read, which is then checked like the command. */
function checkShell(name: string, args: readonly Arg[], check: Check): undefined {
  let script = false;
  let i = 0;
  for (; i < args.length; i++) {
    const text = args[i]?.text ?? null;
    if (text === null && script) break; // the script's place: refused below with what to write
    if (text === null)
      return refuse(
        check,
        `'${name}' with an option or script file that is not a plain word (a variable, substitution, glob, or input of xargs or find): ${SHELL_INSTEAD}`,
      );
    if (text === "--" || text === "-") {
      i++;
      break;
    }
    if (text.startsWith("--")) {
      if (SHELL_LONG.has(text)) continue;
      return refuse(
        check,
        `'${name} ${text}': ${SHELL_LONG_REFUSED[text] ?? "an option the allowlist does not read"}; ${SHELL_INSTEAD}`,
      );
    }
    if (!/^[-+]./.test(text)) break;
    for (const letter of text.slice(1)) {
      if (letter === "c") script = true;
      else if (letter === "o") {
        const option = args[++i]?.text ?? null;
        if (option === null || option === "keyword")
          return refuse(check, `'${name} -o ${option ?? "$..."}': ${SHELL_REFUSED.k}`);
      } else if (!SHELL_FLAGS.includes(letter))
        return refuse(
          check,
          `'${name} ${text}': ${SHELL_REFUSED[letter] ?? `-${letter} is an option the allowlist does not read`}; ${SHELL_INSTEAD}`,
        );
    }
  }
  const operand = args[i];
  if (!script) {
    const form = operand
      ? `'${name} FILE' runs a script file`
      : `'${name}' without -c reads commands from standard input (a pipe, '<' or a here-document)`;
    return refuse(check, `${form}, which the allowlist cannot read: ${SHELL_INSTEAD}`);
  }
  if (operand?.text == null)
    return refuse(
      check,
      `'${name} -c' with a script that is not a plain quoted string (a variable, substitution, or input of xargs or find): write the script out`,
    );
  check.nested(operand.text, `${name} -c`, check);
}

const VERSION_ONLY = new Set(["--version", "-V", "--help", "-h", "-v"]);

/** The allowlist cannot read Python, Perl, awk...: only a version or help query runs. */
function checkInterpreter(name: string, args: readonly Arg[], check: Check, tail: Tail): undefined {
  if (tail === "closed" && args.length === 1 && VERSION_ONLY.has(args[0]?.text ?? "")) return;
  refuse(
    check,
    `'${name}' runs code the allowlist cannot read (a -c/-e string, a script file or standard input): put the script itself on allow_commands as a path (./analyse.py with a #! line), or ask for a check to run it`,
  );
}

function checkWrapper(name: string, args: readonly Arg[], check: Check, tail: Tail): undefined {
  const spec = WRAPPERS[basename(name)];
  if (!spec) return;
  const parsed = parseOptions(name, args, spec);
  if (typeof parsed === "string") return refuse(check, parsed);
  let next = parsed.next;
  for (let k = 0; k < spec.operands; k++, next++) {
    if (args[next]?.text == null) return refuse(check, `'${name}' with an operand that is not a plain word`);
  }
  const inner = args.slice(next);
  // env's assignments stand before its command; an unknown word there may turn into one.
  if (basename(name) === "env" && inner[0] && (inner[0].text === null || inner[0].text.includes("=")))
    return refuse(
      check,
      `'${name}' with a variable assignment (or a word that may become one) sets the program's environment (PATH, LD_PRELOAD...): drop it, or pass the setting as an argument`,
    );
  if (basename(name) === "flock" && ["-c", "--command"].includes(inner[0]?.text ?? ""))
    return shellScript(`${name} -c`, inner[1], check);
  runInner(name, inner, spec.commandOptional, check, tail);
}

/** The command a wrapper runs, checked as a command one level deeper. */
function runInner(
  name: string,
  inner: readonly Arg[],
  optional: boolean,
  check: Check,
  tail: Tail,
): undefined {
  if (inner.length === 0) {
    if (tail === "open")
      refuse(check, `'${name}' without a command here takes its command from the input: write the command`);
    else if (!optional) refuse(check, `'${name}' without a command`);
    return;
  }
  if (check.depth >= MAX_DEPTH) return refuse(check, `'${name}' nested more than ${MAX_DEPTH} levels deep`);
  checkArgv(inner, { ...check, depth: check.depth + 1 }, tail);
}

function shellScript(label: string, script: Arg | undefined, check: Check): undefined {
  if (script?.text == null)
    return refuse(check, `'${label}' with a script that is not a plain quoted string: write the script out`);
  check.nested(script.text, label, check);
}

type Special = (name: string, args: readonly Arg[], check: Check, tail: Tail) => undefined;

const RUNS_FILE =
  "runs a file the allowlist cannot read: run its commands directly, or put the script's path on allow_commands";
const DEFINES_CODE = "defines code the allowlist cannot follow: write the commands out";

/** Builtins and programs with their own rules; everything else listed is an ordinary program. */
const SPECIAL: Record<string, Special> = {
  eval: checkEval,
  trap: checkTrap,
  source: (name, _args, check) => refuse(check, `'${name}' ${RUNS_FILE}`),
  ".": (name, _args, check) => refuse(check, `'${name}' ${RUNS_FILE}`),
  alias: (name, _args, check) => refuse(check, `'${name}' ${DEFINES_CODE}`),
  enable: (name, _args, check) => refuse(check, `'${name}' loads builtins from files: leave it out`),
  bind: (name, _args, check) => refuse(check, `'${name}' ${DEFINES_CODE}`),
  complete: (name, _args, check) => refuse(check, `'${name}' ${DEFINES_CODE}`),
  compgen: (name, _args, check) => refuse(check, `'${name}' ${DEFINES_CODE}`),
  fc: (name, _args, check) => refuse(check, `'${name}' reruns history through an editor: write the command`),
  hash: checkHash,
  command: checkCommandBuiltin,
  find: checkFind,
  xargs: checkXargs,
  sed: checkSed,
  read: checkRead,
  printf: checkPrintf,
  mapfile: checkMapfile,
  readarray: checkMapfile,
  getopts: (name, args, check) => checkNames(name, args.slice(1, 2), check),
  set: checkSet,
  verilator: checkVerilator,
  jobs: checkJobs,
  wait: checkWait,
  unset: checkUnset,
  test: checkTestIsSet,
  "[": checkTestIsSet,
};

const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** bash evaluates a subscript in the name `unset` is given, so the names must be plain. */
function checkUnset(name: string, args: readonly Arg[], check: Check): undefined {
  if (args.some((a) => a.text === null || !(PLAIN_NAME.test(a.text) || /^-[fvn]$/.test(a.text))))
    refuse(check, `'${name}' of a name that is not a plain word: ${ARITHMETIC_VARIABLE}`);
}

/** `test -v NAME` evaluates a subscript in NAME. */
function checkTestIsSet(name: string, args: readonly Arg[], check: Check): undefined {
  for (const [i, arg] of args.entries()) {
    const next = args[i + 1]?.text ?? null;
    if (arg.text === "-v" && (next === null || !PLAIN_NAME.test(next)))
      return refuse(check, `'${name} -v' of a name that is not a plain word: ${ARITHMETIC_VARIABLE}`);
  }
}

function checkEval(name: string, args: readonly Arg[], check: Check): undefined {
  if (args.some((a) => a.text === null))
    return refuse(check, `'${name}' of a variable or substitution: write the command itself`);
  check.nested(args.map((a) => a.text).join(" "), name, check);
}

/** `trap ACTION SIGNAL...`: the action is code, run later; `trap - SIG`, `trap '' SIG`, `trap -p` are not. */
function checkTrap(name: string, args: readonly Arg[], check: Check): undefined {
  const rest = args[0]?.text === "--" ? args.slice(1) : args;
  const action = rest[0];
  if (!action || rest.length === 1 || ["-p", "-l", "-", ""].includes(action.text ?? "?")) return;
  if (action.text === null)
    return refuse(check, `'${name}' with an action that is not a plain quoted string`);
  check.nested(action.text, `${name} action`, check);
}

/** `hash -p PATH NAME` makes NAME run PATH. */
function checkHash(name: string, args: readonly Arg[], check: Check): undefined {
  if (args.some((a) => a.text === null || /^-[a-z]*p/.test(a.text)))
    refuse(check, `'${name} -p' makes a name run another file: leave it out`);
}

/** `command -v NAME` only looks a name up; `command NAME ...` runs it (and skips functions). */
function checkCommandBuiltin(name: string, args: readonly Arg[], check: Check, tail: Tail): undefined {
  if (args[0]?.text === "-v" || args[0]?.text === "-V") return;
  checkWrapper(name, args, check, tail);
}

const FIND_EXEC = new Set(["-exec", "-execdir", "-ok", "-okdir"]);

/** find's `-exec PROGRAM ... ;` runs PROGRAM with file names where `{}` stands (or at the end, `+`). */
function checkFind(name: string, args: readonly Arg[], check: Check): undefined {
  if (args.some((a) => a.text === null))
    return refuse(
      check,
      `'${name}' with a word that expands (a variable, unquoted glob or brace) could grow an -exec: quote patterns (-name '*.f90') and write paths out`,
    );
  for (let i = 0; i < args.length; i++) {
    if (!FIND_EXEC.has(args[i]?.text ?? "")) continue;
    const start = i + 1;
    let end = start;
    // `+` ends the command only right after `{}`; otherwise it is an argument.
    while (
      end < args.length &&
      args[end]?.text !== ";" &&
      !(args[end]?.text === "+" && args[end - 1]?.text === "{}")
    )
      end++;
    if (end >= args.length) return refuse(check, `'${name} ${args[i]?.text}' without its closing ';' or '+'`);
    const inner = args.slice(start, end).map((a) => (a.text?.includes("{}") ? unknown() : a));
    runInner(`${name} ${args[i]?.text}`, inner, false, check, args[end]?.text === "+" ? "open" : "closed");
    i = end;
  }
}

/** xargs appends its input to the command: the command must be written out and checkable. */
function checkXargs(name: string, args: readonly Arg[], check: Check): undefined {
  const parsed = parseOptions(name, args, XARGS);
  if (typeof parsed === "string") return refuse(check, parsed);
  const marker = replaceMarker(parsed);
  const written = args.slice(parsed.next);
  const inner = written.length > 0 ? written : [knownArg("echo")];
  // With -I the input lands inside words; a word holding the marker is unknown.
  const resolved =
    marker === undefined ? inner : inner.map((a) => (a.text?.includes(marker) ? unknown() : a));
  runInner(name, resolved, false, check, "open");
}

function replaceMarker(parsed: ParsedOptions): string | undefined {
  const value = parsed.seen.get("I") ?? parsed.seen.get("replace") ?? parsed.seen.get("i");
  if (value !== undefined) return value === null || value === "" ? "{}" : value;
  return parsed.seen.has("i") || parsed.seen.has("replace") ? "{}" : undefined;
}

/** GNU sed runs shell commands with its `e` command and `s///e`; `--sandbox` turns them off. */
function checkSed(name: string, args: readonly Arg[], check: Check): undefined {
  if (args.some((a) => a.text === "--sandbox")) return;
  refuse(
    check,
    `'${name}' without --sandbox can run shell commands (its e command and s///e): write ${name} --sandbox ...`,
  );
}

/** C, C++ and Fortran compiler drivers (gcc family, clang, MPI and Intel wrappers, nvcc). */
const COMPILER =
  /^(cc|c\+\+|cpp|gcc|g\+\+|gfortran|f77|f95|clang|clang\+\+|mpicc|mpicxx|mpic\+\+|mpif77|mpif90|mpifort|icc|icpc|icx|icpx|ifort|ifx|nvcc)(-[0-9.]+)?$/;
/**
 * Compiler options that run or load another program: `-wrapper sh,-c,...` runs it, `-fplugin`
 * and linker plugins load code, `-B` and `-specs` choose the programs the driver runs, `@file`
 * reads more options from a file the allowlist cannot see.
 */
const COMPILER_RUNS =
  /^(-wrapper|-fplugin|-iplugindir|-B|-specs|--specs|@|--ld-path|-fuse-ld=.*\/|-no-integrated-cpp)|plugin/;

function checkCompiler(name: string, args: readonly Arg[], check: Check): undefined {
  for (const arg of args) {
    // A glob or variable could become `-wrapper` (a file may be named so): write the words out.
    if (arg.text === null)
      return refuse(
        check,
        `'${name}' with a word that expands (a glob or variable could become an option such as -wrapper): write the file names and flags out`,
      );
    if (COMPILER_RUNS.test(arg.text))
      return refuse(
        check,
        `'${name} ${arg.text}' makes the compiler run or load another program (-wrapper, -fplugin, -B, -specs, @file, linker plugins): leave it out`,
      );
  }
}

/** Verilator hands -CFLAGS/-LDFLAGS/-MAKEFLAGS to the compiler and make it runs; -f/-F read options from files. */
function checkVerilator(name: string, args: readonly Arg[], check: Check): undefined {
  for (const [i, arg] of args.entries()) {
    const text = arg.text;
    if (text === null)
      return refuse(
        check,
        `'${name}' with a word that expands (a glob or variable): write file names and options out`,
      );
    if (/^--?[fF]$/.test(text))
      return refuse(
        check,
        `'${name} ${text}' reads options from a file the allowlist cannot read: write the options out`,
      );
    if (/^--?(CFLAGS|LDFLAGS|MAKEFLAGS|compiler|make)$/.test(text)) {
      const value = args[i + 1]?.text ?? null;
      const words = value === null ? [null] : value.split(/\s+/);
      if (
        words.some(
          (w) => w === null || COMPILER_RUNS.test(w) || /^--?(f|file|eval|E)$/.test(w) || w.includes("="),
        )
      )
        return refuse(
          check,
          `'${name} ${text} ${value ?? "$..."}' passes options that run or load programs (or make variables) to the compiler or make: leave them out`,
        );
    }
  }
}

/** bash's `jobs -x COMMAND ARGS` runs COMMAND. */
function checkJobs(name: string, args: readonly Arg[], check: Check, tail: Tail): undefined {
  if (args[0]?.text === "-x") return runInner(`${name} -x`, args.slice(1), false, check, tail);
  if (args.some((a) => a.text === null || /^-[a-z]*x/.test(a.text)))
    return refuse(check, `'${name} -x' runs a command: write the command itself`);
}

/** bash's `wait -p NAME` writes the job's pid into NAME. */
function checkWait(name: string, args: readonly Arg[], check: Check): undefined {
  for (const [i, arg] of args.entries()) {
    if (arg.text === null || /^-[a-z]*p$/.test(arg.text))
      return checkNames(name, args.slice(i + 1, i + 2), check);
  }
}

/** `read NAME`, `read -a NAME`: the names it writes. */
function checkRead(name: string, args: readonly Arg[], check: Check): undefined {
  const parsed = parseOptions(name, args, { flags: "ers", valued: "adinNptu", long: [], longValued: [] });
  if (typeof parsed === "string") return refuse(check, parsed);
  const array = parsed.seen.get("a");
  if (array != null) checkNames(name, [knownArg(array)], check);
  checkNames(name, args.slice(parsed.next), check);
}

/** `printf -v NAME` writes a variable. */
function checkPrintf(name: string, args: readonly Arg[], check: Check): undefined {
  const first = args[0]?.text ?? null;
  if (first === null) return refuse(check, `'${name}' with a format that is not a plain word`);
  if (first === "-v") return checkNames(name, args.slice(1, 2), check);
  if (first.startsWith("-v")) checkNames(name, [knownArg(first.slice(2))], check);
}

function checkMapfile(name: string, args: readonly Arg[], check: Check): undefined {
  const parsed = parseOptions(name, args, {
    flags: "t",
    valued: "dnOsuc",
    long: [],
    longValued: [],
    refused: { "-C": `'${name} -C' runs a callback the allowlist cannot follow: leave it out` },
  });
  if (typeof parsed === "string") return refuse(check, parsed);
  checkNames(name, args.slice(parsed.next), check);
}

function checkNames(name: string, args: readonly Arg[], check: Check): undefined {
  for (const arg of args) {
    if (arg.text === null) refuse(check, `'${name}' writing a variable whose name is not a plain word`);
    else if (!writableName(arg.text)) refuse(check, refusedName(arg.text));
  }
}

/** `set -k` / `set -o keyword` turns later PATH=... arguments into the environment. */
function checkSet(name: string, args: readonly Arg[], check: Check): undefined {
  for (const [i, arg] of args.entries()) {
    const text = arg.text ?? "";
    if (text === "--" || !/^[-+]/.test(text)) return;
    if (/^[-+][a-zA-Z]*k/.test(text) || (/^[-+]o$/.test(text) && args[i + 1]?.text === "keyword"))
      return refuse(check, `'${name} -k': ${SHELL_REFUSED.k}`);
  }
}
