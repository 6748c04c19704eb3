// What the command allowlist knows about programs that run other code. Shared by the checker
// (runner/tools/allowlist.ts) and by `scifi validate`'s warnings, so both name the same programs.
import { basename } from "node:path";

/**
 * POSIX-family shells whose `-c` script the allowlist parses (bash dialect, a superset of what
 * these accept). zsh is not here: it reads ~/.zshenv even for `-c` and runs code from glob
 * qualifiers, which the parser sees as plain text.
 */
const SHELLS = new Set([
  "sh",
  "bash",
  "rbash",
  "dash",
  "ash",
  "ksh",
  "ksh93",
  "mksh",
  "lksh",
  "pdksh",
  "posh",
]);

/** Interpreters of languages the allowlist cannot read: every form that runs code is refused. */
const INTERPRETERS = new Set([
  "zsh",
  "fish",
  "csh",
  "tcsh",
  "yash",
  "perl",
  "ruby",
  "irb",
  "node",
  "nodejs",
  "deno",
  "bun",
  "php",
  "lua",
  "luajit",
  "Rscript",
  "R",
  "julia",
  "octave",
  "matlab",
  "tclsh",
  "wish",
  "expect",
  "awk",
  "gawk",
  "mawk",
  "nawk",
  "ed",
  "jshell",
  "guile",
]);
const INTERPRETER_PATTERN = /^(python|pypy|perl|ruby|lua|php|node)[0-9.]*$/;

/**
 * Programs that run another program or commands but whose options the allowlist does not parse
 * (or that switch user or root): refused under an allowlist even when listed.
 */
const UNCHECKED_RUNNERS = new Set([
  "sudo",
  "su",
  "doas",
  "runuser",
  "pkexec",
  "sg",
  "newgrp",
  "chroot",
  "unshare",
  "nsenter",
  "strace",
  "ltrace",
  "gdb",
  "lldb",
  "watch",
  "script",
  "parallel",
  "chrt",
  "prlimit",
  "numactl",
  "firejail",
  "fakeroot",
  "proot",
  "unbuffer",
  "systemd-run",
  "start-stop-daemon",
  "screen",
  "tmux",
  "ssh",
  "vi",
  "vim",
  "nvim",
  "ex",
  "emacs",
  "less",
  "more",
  "man",
]);

export type ProgramKind = "shell" | "interpreter" | "unchecked-runner" | "other";

/** The kind of a program by its base name (a path is judged by what it is called). */
export function programKind(name: string): ProgramKind {
  const base = basename(name);
  if (SHELLS.has(base)) return "shell";
  if (INTERPRETERS.has(base) || INTERPRETER_PATTERN.test(base)) return "interpreter";
  if (UNCHECKED_RUNNERS.has(base)) return "unchecked-runner";
  return "other";
}
