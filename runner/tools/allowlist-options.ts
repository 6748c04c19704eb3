// Option parsing for programs that run another program (env, timeout, nice, xargs...), so the
// allowlist finds the inner command exactly where the program will. Like GNU getopt with a
// leading "+", parsing stops at the first operand; an option we do not know is refused rather than
// guessed (a long option's unique prefix is accepted by getopt, and would hide `--split-string`).
import type { Arg } from "./allowlist-words.ts";

export interface OptionSpec {
  /** Short options without a value. */
  flags: string;
  /** Short options whose value is the rest of the word or the next word. */
  valued: string;
  /** Short options whose optional value can only be attached (xargs -i[R], -e[E], -l[N]). */
  attached?: string;
  /** `-10` style numeric options (nice). */
  digits?: boolean;
  long: string[];
  /** Long options with a value, as `--name=value` or `--name value`. */
  longValued: string[];
  /** Options that are refused outright, with what to write instead. */
  refused?: Record<string, string>;
}

export interface WrapperSpec extends OptionSpec {
  /** Words between the options and the command (timeout's DURATION, flock's FILE, taskset's MASK). */
  operands: number;
  /** The program does something useful without a command (`env` prints, `nice` prints). */
  commandOptional: boolean;
}

export interface ParsedOptions {
  /** Index of the first word after the options. */
  next: number;
  /** Options seen: short letter or long name (without dashes), with its value. */
  seen: Map<string, string | null>;
}

const NO_OPTIONS: WrapperSpec = {
  flags: "",
  valued: "",
  long: [],
  longValued: [],
  operands: 0,
  commandOptional: false,
};

/** Wrappers whose inner command is checked like a command of its own. */
export const WRAPPERS: Record<string, WrapperSpec> = {
  env: {
    ...NO_OPTIONS,
    flags: "0iv",
    valued: "uC",
    long: ["ignore-environment", "null", "debug"],
    longValued: ["unset", "chdir"],
    commandOptional: true,
    refused: {
      "-S": "'env -S' splits a string into a command the allowlist cannot read: write the command itself",
      "--split-string":
        "'env --split-string' splits a string into a command the allowlist cannot read: write the command itself",
    },
  },
  nohup: NO_OPTIONS,
  timeout: {
    ...NO_OPTIONS,
    flags: "v",
    valued: "sk",
    long: ["foreground", "preserve-status", "verbose"],
    longValued: ["signal", "kill-after"],
    operands: 1,
  },
  nice: { ...NO_OPTIONS, valued: "n", digits: true, longValued: ["adjustment"], commandOptional: true },
  setsid: { ...NO_OPTIONS, flags: "cfw", long: ["ctty", "fork", "wait"] },
  stdbuf: { ...NO_OPTIONS, valued: "ioe", longValued: ["input", "output", "error"] },
  ionice: { ...NO_OPTIONS, flags: "t", valued: "cn", commandOptional: true },
  taskset: {
    ...NO_OPTIONS,
    flags: "ac",
    long: ["all-tasks", "cpu-list"],
    operands: 1,
    refused: { "-p": "'taskset -p' changes another process: run the command under taskset instead" },
  },
  flock: {
    ...NO_OPTIONS,
    flags: "sexnouF",
    valued: "wE",
    long: ["shared", "exclusive", "nonblock", "close", "unlock", "no-fork", "verbose"],
    longValued: ["timeout", "conflict-exit-code"],
    operands: 1,
  },
  time: {
    ...NO_OPTIONS,
    flags: "apqv",
    valued: "fo",
    long: ["append", "portability", "quiet", "verbose"],
    longValued: ["format", "output"],
  },
  valgrind: {
    ...NO_OPTIONS,
    flags: "qvh",
    long: [],
    longValued: [],
    refused: {
      "--db-command": "'valgrind --db-command' runs a command the allowlist cannot read",
      "--db-attach": "'valgrind --db-attach' runs a debugger command the allowlist cannot read",
    },
  },
  busybox: NO_OPTIONS,
  exec: { ...NO_OPTIONS, flags: "cl", valued: "a", commandOptional: true },
  command: { ...NO_OPTIONS, flags: "p", commandOptional: true },
  builtin: { ...NO_OPTIONS, commandOptional: true },
};

export const XARGS: OptionSpec = {
  flags: "0prtx",
  valued: "aEdILnPs",
  attached: "eil",
  long: ["null", "no-run-if-empty", "verbose", "interactive", "exit", "open-tty", "show-limits"],
  longValued: ["arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars"],
  refused: {
    "--process-slot-var":
      "'xargs --process-slot-var' sets an environment variable of the command (PATH, LD_PRELOAD...): drop it",
  },
};

/** Valgrind's own options are all `--name=value` or `--name`; the program follows them. */
const VALGRIND_LONG = /^--[a-z0-9-]+(=.*)?$/;

export function parseOptions(name: string, args: readonly Arg[], spec: OptionSpec): ParsedOptions | string {
  const seen = new Map<string, string | null>();
  let i = 0;
  while (i < args.length) {
    const text = args[i]?.text ?? null;
    if (text === null)
      return `'${name}' with an option that is not a plain word (a variable, glob or substitution)`;
    if (text === "--") return { next: i + 1, seen };
    if (!text.startsWith("-") || text === "-") break;
    const step = text.startsWith("--")
      ? longOption(name, text, args[i + 1], spec, seen)
      : shortCluster(name, text, args[i + 1], spec, seen);
    if (typeof step === "string") return step;
    i += step;
  }
  return { next: i, seen };
}

/** Returns how many words the option used, or why it is refused. */
function longOption(
  name: string,
  text: string,
  following: Arg | undefined,
  spec: OptionSpec,
  seen: Map<string, string | null>,
): number | string {
  const eq = text.indexOf("=");
  const option = eq < 0 ? text : text.slice(0, eq);
  const why = spec.refused?.[option];
  if (why) return why;
  const bare = option.slice(2);
  if (spec.long.includes(bare) && eq < 0) {
    seen.set(bare, null);
    return 1;
  }
  if (spec.longValued.includes(bare)) {
    if (eq >= 0) {
      seen.set(bare, text.slice(eq + 1));
      return 1;
    }
    if (following?.text == null) return `'${name} ${option}' needs a value that is a plain word`;
    seen.set(bare, following.text);
    return 2;
  }
  if (name === "valgrind" && VALGRIND_LONG.test(text)) return 1;
  return unknownOption(name, option);
}

function shortCluster(
  name: string,
  text: string,
  following: Arg | undefined,
  spec: OptionSpec,
  seen: Map<string, string | null>,
): number | string {
  for (let k = 1; k < text.length; k++) {
    const letter = text.charAt(k);
    const why = spec.refused?.[`-${letter}`];
    if (why) return why;
    if (spec.flags.includes(letter)) seen.set(letter, null);
    else if (spec.digits && /[0-9]/.test(letter)) continue;
    else if (spec.attached?.includes(letter)) {
      seen.set(letter, text.slice(k + 1));
      return 1;
    } else if (spec.valued.includes(letter)) {
      const rest = text.slice(k + 1);
      if (rest !== "") {
        seen.set(letter, rest);
        return 1;
      }
      if (following?.text == null) return `'${name} -${letter}' needs a value that is a plain word`;
      seen.set(letter, following.text);
      return 2;
    } else return unknownOption(name, `-${letter}`);
  }
  return 1;
}

function unknownOption(name: string, option: string): string {
  return `'${name} ${option}' is an option the allowlist does not read (it cannot tell where the command starts): leave it out, or run the program directly`;
}
