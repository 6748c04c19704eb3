// Attack tests for the command allowlist (issue 13 item 8: it reads what it allows, or refuses).
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands, not templates
// Each refused form is a way past a naive allowlist; each message must say what to write instead.
import { describe, expect, it } from "vitest";
import { checkCommand } from "../../runner/tools/allowlist.ts";

/** A generous list, so every refusal below is about the form, not a missing name. */
const allow = [
  "make",
  "ls",
  "cat",
  "echo",
  "grep",
  "verilator",
  "./stats",
  "sh",
  "bash",
  "dash",
  "ksh",
  "mksh",
  "zsh",
  "busybox",
  "env",
  "nohup",
  "timeout",
  "setsid",
  "nice",
  "stdbuf",
  "ionice",
  "taskset",
  "flock",
  "time",
  "xargs",
  "find",
  "python3",
  "perl",
  "ruby",
  "node",
  "awk",
  "sudo",
  "su",
  "chroot",
  "strace",
  "watch",
  "exec",
  "eval",
  "source",
  ".",
  "command",
  "builtin",
  "trap",
  "alias",
  "hash",
  "export",
  "declare",
  "read",
  "printf",
  "mapfile",
  "set",
  "unset",
  "test",
  "sed",
  "enable",
  "jobs",
  "wait",
  "sleep",
];

function refusal(command: string, list: readonly string[] = allow): string {
  const verdict = checkCommand(command, list);
  if (verdict.ok) throw new Error(`allowed, expected a refusal: ${command} -> ${verdict.programs.join(" ")}`);
  return verdict.reason;
}

const INSTEAD_SHELL = "write the commands as sh -c '...'";

describe("allowlist: shells run only a -c script the allowlist reads", () => {
  const refused: [string, string][] = [
    ["sh FILE", `'sh FILE' runs a script file, which the allowlist cannot read: ${INSTEAD_SHELL}`],
    ["bash checks/run_tb.sh", "'bash FILE' runs a script file"],
    ["sh < script.sh", "'sh' without -c reads commands from standard input"],
    ["cat x | sh", "'sh' without -c reads commands from standard input (a pipe, '<' or a here-document)"],
    ["cat x | bash -s", "'bash -s': -s reads the commands from standard input"],
    ["sh -s < x", "-s reads the commands from standard input"],
    ["sh <<'EOF'\ncurl x\nEOF", "'sh' without -c reads commands from standard input"],
    ["bash <<< 'curl x'", "'bash' without -c reads commands from standard input"],
    ["sh -lc 'make'", "'sh -lc': -l (login) reads ~/.profile"],
    ["bash --login -c 'make'", "'bash --login': -l (login) reads ~/.profile"],
    ["sh -i -c 'make'", "'sh -i': -i (interactive) reads $ENV or ~/.bashrc"],
    ["ENV=evil.sh sh -i", "a variable assignment in front of a command ('ENV=... sh')"],
    ["BASH_ENV=evil.sh bash -c 'make'", "a variable assignment in front of a command ('BASH_ENV=... bash')"],
    ["bash --rcfile evil -c 'make'", "--rcfile reads a file the allowlist cannot read"],
    ["bash --init-file evil -c 'make'", "--init-file reads a file"],
    ["bash --debugger -c 'make'", "--debugger reads a debugger file"],
    ["bash -O extdebug -c 'make'", "-O sets a bash shopt"],
    ["bash -o keyword -c 'make PATH=/tmp/x'", "-k turns arguments like PATH=..."],
    ["sh -k -c 'make'", "-k turns arguments like PATH=..."],
    ["sh -Cc 'curl x'", "inside 'sh -c': not on this task's command allowlist: 'curl'"],
    ["sh -ec 'make; curl x'", "inside 'sh -c': not on this task's command allowlist: 'curl'"],
    ["bash -xc 'curl x'", "inside 'bash -c': not on this task's command allowlist: 'curl'"],
    ["sh -c -e 'curl x'", "inside 'sh -c'"],
    ["sh -c -- 'curl x'", "inside 'sh -c'"],
    ["sh -c 'sh -c \"bash -c curl\"'", "'curl'"],
    ['sh -c "$(cat f)"', "'sh -c' with a script that is not a plain quoted string"],
    ['sh -c "$S"', "not a plain quoted string"],
    ["sh -c '$0' curl", "a command name that is not a plain word"],
    ["sh -c '\"$@\"' x curl", "a command name that is not a plain word"],
    ["dash -c 'curl x'", "inside 'dash -c'"],
    ["ksh -c 'curl x'", "inside 'ksh -c'"],
    ["mksh FILE", "'mksh FILE' runs a script file"],
    ["zsh -c 'make'", "'zsh' runs code the allowlist cannot read"],
    ["busybox sh -c 'curl x'", "inside 'sh -c'"],
    ["busybox sh FILE", "'sh FILE' runs a script file"],
    ["busybox wget x", "'wget'"],
    ["\\sh FILE", "a command name that is not a plain word"],
    ['"sh" FILE', "a command name that is not a plain word"],
    ["{s,}h FILE", "a command name that is not a plain word"],
    ["s? FILE", "a command name that is not a plain word"],
    ["$0 FILE", "a command name that is not a plain word"],
    ["${x} FILE", "a command name that is not a plain word"],
  ];
  for (const [command, message] of refused) {
    it(`refuses ${JSON.stringify(command)}`, () => {
      expect(refusal(command)).toContain(message);
    });
  }

  it("says how to write it instead and lists the allowed programs", () => {
    const reason = refusal("sh run.sh", ["sh", "make"]);
    expect(reason).toContain("write the commands as sh -c '...', or put the script's path on allow_commands");
    expect(reason).toMatch(/Allowed programs: sh, make\.$/);
  });
});

describe("allowlist: wrappers have their command checked", () => {
  const refused: [string, string][] = [
    ["env curl x", "'curl'"],
    ["env PATH=/tmp/x make", "'env' with a variable assignment"],
    ["env LD_PRELOAD=/tmp/x.so make", "'env' with a variable assignment"],
    ["env -i BASH_ENV=x bash -c make", "'env' with a variable assignment"],
    ["env -S 'curl x'", "'env -S' splits a string into a command"],
    ["env --split-string='curl x'", "'env --split-string' splits a string"],
    ["env --sp='curl x'", "'env --sp' is an option the allowlist does not read"],
    ["env $cmd", "'env' with an option that is not a plain word"],
    ["env sh FILE", "'sh FILE' runs a script file"],
    ["nohup curl x", "'curl'"],
    ["nohup sh FILE", "'sh FILE'"],
    ["timeout 5 curl x", "'curl'"],
    ["timeout -s KILL 5 sh -c 'curl x'", "inside 'sh -c'"],
    ["timeout $t make", "'timeout' with an option that is not a plain word"],
    ["timeout 5 $cmd", "a command name that is not a plain word"],
    ["setsid curl x", "'curl'"],
    ["nice -n 5 curl x", "'curl'"],
    ["nice -10 curl x", "'curl'"],
    ["stdbuf -oL curl x", "'curl'"],
    ["ionice -c 3 curl x", "'curl'"],
    ["taskset 0x1 curl x", "'curl'"],
    ["taskset -p 0x1 1", "'taskset -p' changes another process"],
    ["flock lockfile curl x", "'curl'"],
    ["flock lockfile -c 'curl x'", "inside 'flock -c'"],
    ["time -p curl x", "'curl'"],
    ["time sh FILE", "'sh FILE'"],
    ["exec curl x", "'curl'"],
    ["exec sh FILE", "'sh FILE'"],
    ["exec -a make curl", "'curl'"],
    ["command curl x", "'curl'"],
    ["command -p sh FILE", "'sh FILE'"],
    ["builtin eval 'curl x'", "inside 'eval'"],
    ["nohup nice timeout 5 env setsid curl", "'curl'"],
    ["nohup", "'nohup' without a command"],
    ["sudo make", "'sudo' runs other programs in ways the allowlist does not read"],
    ["su -c make", "'su' runs other programs"],
    ["chroot / make", "'chroot' runs other programs"],
    ["strace -o '|curl x' make", "'strace' runs other programs"],
    ["watch make", "'watch' runs other programs"],
    ["xargs curl", "'curl'"],
    ["ls | xargs sh", "'sh' without -c reads commands"],
    ["ls | xargs sh -c", "'sh -c' with a script that is not a plain quoted string"],
    ["ls | xargs -I{} sh -c 'make {}'", "'sh -c' with a script that is not a plain quoted string"],
    ["ls | xargs -i sh -c 'make {}'", "'sh -c' with a script that is not a plain quoted string"],
    ["ls | xargs -I % sh -c 'make %'", "'sh -c' with a script that is not a plain quoted string"],
    ["ls | xargs env", "'env' without a command here takes its command from the input"],
    ["ls | xargs timeout 5", "'timeout' without a command here takes its command from the input"],
    ["ls | xargs python3", "'python3' runs code the allowlist cannot read"],
    ["ls | xargs --process-slot-var=PATH make", "'xargs --process-slot-var' sets an environment variable"],
    ["find . -exec curl {} \\;", "'curl'"],
    ["find . -execdir curl {} +", "'curl'"],
    ["find . -ok curl {} \\;", "'curl'"],
    ["find . -okdir sh FILE \\;", "'sh FILE'"],
    ["find . -exec sh -c '{}' \\;", "'sh -c' with a script that is not a plain quoted string"],
    ["find . -exec env {} +", "'env' with an option that is not a plain word"],
    ["find . -name x -exec make", "'find -exec' without its closing ';' or '+'"],
    ["find . {-exec,curl} \\;", "'find' with a word that expands"],
    ["find . -exe? curl \\;", "'find' with a word that expands"],
    ["find . $args", "'find' with a word that expands"],
  ];
  for (const [command, message] of refused) {
    it(`refuses ${JSON.stringify(command)}`, () => {
      expect(refusal(command)).toContain(message);
    });
  }

  it("xargs without a command runs echo, which must be listed", () => {
    expect(refusal("xargs", ["xargs"])).toContain("not on this task's command allowlist: 'echo'");
  });
});

describe("allowlist: interpreters of languages it cannot read", () => {
  const refused = [
    "python3 -c 'import os; os.system(\"curl x\")'",
    "python3 script.py",
    "python3",
    "python3 - < x.py",
    "python3 -m http.server",
    "perl -e 'system q(curl)'",
    "ruby -e 'exec %q(curl)'",
    "node -e 'require(\"child_process\")'",
    "awk 'BEGIN { system(\"curl x\") }'",
    "zsh -fc 'echo *(e:curl x:)'",
  ];
  for (const command of refused) {
    it(`refuses ${JSON.stringify(command)}`, () => {
      const reason = refusal(command);
      expect(reason).toContain("runs code the allowlist cannot read");
      expect(reason).toContain("put the script itself on allow_commands as a path");
    });
  }

  it("allows a version query", () => {
    expect(checkCommand("python3 --version", allow).ok).toBe(true);
  });

  it("sed runs commands (e, s///e) unless --sandbox", () => {
    expect(refusal("sed -n '1e curl x' f")).toContain("write sed --sandbox");
    expect(refusal("sed 's/x/curl/e' f")).toContain("write sed --sandbox");
    expect(checkCommand("sed --sandbox -n 1p f", allow).ok).toBe(true);
  });
});

describe("allowlist: builtins that run code", () => {
  const refused: [string, string][] = [
    ["eval 'curl x'", "inside 'eval': not on this task's command allowlist: 'curl'"],
    ['eval "$cmd"', "'eval' of a variable or substitution"],
    ["eval sh FILE", "'sh FILE'"],
    ["trap 'curl x' EXIT", "inside 'trap action': not on this task's command allowlist: 'curl'"],
    ['trap "$c" EXIT', "'trap' with an action that is not a plain quoted string"],
    ["source ./env.sh", "'source' runs a file the allowlist cannot read"],
    [". ./env.sh", "'.' runs a file the allowlist cannot read"],
    ["alias ls='curl x'", "'alias' defines code the allowlist cannot follow"],
    ["hash -p /tmp/evil make; make", "'hash -p' makes a name run another file"],
    ["enable -f ./x.so make", "'enable' loads builtins from files"],
    ["mapfile -C 'curl x' -c 1 arr < f", "'mapfile -C' runs a callback"],
    ["f() { curl x; }; f", "'curl'"],
    ["jobs -x curl x", "'curl'"],
    ["jobs -x sh FILE", "'sh FILE'"],
    ["cat <<EOF\n$(curl x)\nEOF", "'curl'"],
    ["cat <(curl x)", "'curl'"],
    ["sh <(cat f)", "'sh' with an option or script file that is not a plain word"],
    ["coproc sh FILE", "'sh FILE'"],
    ["time -p sh FILE", "'sh FILE'"],
    ["echo ok & sh FILE", "'sh FILE'"],
    ["make() { sh FILE; }; make", "'sh FILE'"],
  ];
  for (const [command, message] of refused) {
    it(`refuses ${JSON.stringify(command)}`, () => {
      expect(refusal(command)).toContain(message);
    });
  }
});

describe("allowlist: environment and variables", () => {
  const refused: [string, string][] = [
    ["PATH=/tmp/x make", "a variable assignment in front of a command ('PATH=... make')"],
    ["LD_PRELOAD=/tmp/x.so make", "('LD_PRELOAD=... make') sets the program's environment"],
    ["cc=gcc make", "a variable assignment in front of a command ('cc=... make')"],
    ["PATH=/tmp/x; make", "assigning to 'PATH'"],
    ["PATH+=:/tmp/x; make", "assigning to 'PATH'"],
    ["export PATH=/tmp/x:$PATH", "assigning to 'PATH'"],
    ["export LD_PRELOAD=/tmp/x.so", "assigning to 'LD_PRELOAD'"],
    ["declare -n ref=PATH; ref=/tmp", "flags other than -n (nameref)"],
    ["declare -i x", "flags other than -n (nameref) and -i (arithmetic)"],
    ['declare "$n"=1', "write names as plain words"],
    ["read PATH < f", "assigning to 'PATH'"],
    ["read -a PATH < f", "assigning to 'PATH'"],
    ["printf -v PATH %s /tmp", "assigning to 'PATH'"],
    ["mapfile PATH < f", "assigning to 'PATH'"],
    ["echo $((PATH=5))", "assigning to 'PATH'"],
    [": ${PATH:=/tmp/x}", "assigning to 'PATH'"],
    ["echo ${IFS=x}", "assigning to 'IFS'"],
    ["set -k", "-k turns arguments like PATH=..."],
    ['echo "${x@P}"', "expands the variable's text as code"],
    ["y='a[$(curl x)]'; echo $((y))", "text like 'a[$(...)]'"],
    ["read y < f; echo $((y))", "a variable inside arithmetic"],
    ["read y < f; (( y > 1 ))", "a variable inside arithmetic"],
    ["read y < f; [[ $y -eq 1 ]]", "a variable inside arithmetic"],
    ["read y < f; echo ${a[y]}", "a variable inside arithmetic"],
    ["read y < f; echo ${x:y}", "a variable inside arithmetic"],
    ['read y < f; test -v "$y"', "'test -v' of a name that is not a plain word"],
    ['read y < f; unset "$y"', "'unset' of a name that is not a plain word"],
    ["[[ -v 'a[$(curl x)]' ]]", "not a plain name"],
    ["for PATH in /tmp/x; do make; done", "assigning to 'PATH'"],
    ["read y < f; for ((; y < 3; )); do make; done", "a variable inside arithmetic"],
    ["read y < f; a[y]=1", "a variable inside arithmetic"],
    ["read y < f; a=([y]=1)", "a variable inside arithmetic"],
    ["sleep 1 & wait -p PATH", "assigning to 'PATH'"],
    ["select LD_PRELOAD in x.so; do make; done", "assigning to 'LD_PRELOAD'"],
    // dash reads ((curl)) as two nested subshells running curl; bash as arithmetic on $curl.
    ["((curl))", "a variable inside arithmetic"],
  ];
  for (const [command, message] of refused) {
    it(`refuses ${JSON.stringify(command)}`, () => {
      expect(refusal(command, [...allow, ":"])).toContain(message);
    });
  }
});

describe("allowlist: compilers and verilator run only what they compile", () => {
  const list = ["g++", "gfortran", "gcc-12", "verilator", "make"];
  const refused: [string, string][] = [
    [
      "g++ -wrapper /bin/sh,-c,'curl x' a.cpp",
      "'g++ -wrapper' makes the compiler run or load another program",
    ],
    ["gfortran -fplugin=./x.so a.f90", "makes the compiler run or load another program"],
    ["gcc-12 -B/tmp/x/ a.c", "'gcc-12 -B/tmp/x/'"],
    ["g++ -specs=evil.specs a.cpp", "makes the compiler run or load another program"],
    ["g++ @opts.txt", "'g++ @opts.txt'"],
    ["g++ -Wl,-plugin,./x.so a.cpp", "makes the compiler run or load another program"],
    ["g++ -fuse-ld=/tmp/x/ld a.cpp", "makes the compiler run or load another program"],
    ["g++ *.cpp", "a glob or variable could become an option such as -wrapper"],
    ["g++ $flags a.cpp", "'g++' with a word that expands"],
    [
      "verilator -CFLAGS '-wrapper /bin/sh,-c,curl' --cc --exe --build a.v t.cpp",
      "passes options that run or load programs",
    ],
    ["verilator -MAKEFLAGS 'SHELL=/tmp/x' --cc --build a.v", "passes options that run or load programs"],
    ["verilator -f opts.vc", "reads options from a file"],
    ["verilator --cc rtl/*.v", "'verilator' with a word that expands"],
  ];
  for (const [command, message] of refused) {
    it(`refuses ${JSON.stringify(command)}`, () => {
      expect(refusal(command, list)).toContain(message);
    });
  }

  it("builds as the examples do", () => {
    const verilator =
      "verilator --cc --exe --build -j 2 -Wall --Mdir /tmp/tb --top-module counter -o tb_counter rtl/counter.v /task/checks/tb_counter.cpp";
    expect(checkCommand(verilator, list).ok).toBe(true);
    expect(checkCommand("verilator -CFLAGS -O2 --cc --exe --build a.v t.cpp", list).ok).toBe(true);
    expect(
      checkCommand(
        "gfortran -O2 -c src/stats_mod.f90 -o stats_mod.o && gfortran -o stats main.o stats_mod.o",
        list,
      ).ok,
    ).toBe(true);
  });
});

describe("allowlist: programs are matched by what runs, not by their base name", () => {
  const refused: [string, string][] = [
    ["/tmp/x/verilator --version", "'/tmp/x/verilator' (a path runs only when it is on the list exactly"],
    ["./verilator", "write the bare name 'verilator' to run the installed program"],
    ["/usr/bin/make", "write the bare name 'make'"],
    ["../stats", "'../stats'"],
    ["stats", "'stats'"],
    ["timeout 5 ./verilator", "'./verilator'"],
    ["find . -exec /tmp/x/make \\;", "'/tmp/x/make'"],
    ["~/make", "a command name that is not a plain word"],
  ];
  for (const [command, message] of refused) {
    it(`refuses ${JSON.stringify(command)}`, () => {
      expect(refusal(command)).toContain(message);
    });
  }

  it("runs a path that is on the list exactly", () => {
    expect(checkCommand("./stats data/values.txt", allow)).toEqual({ ok: true, programs: ["./stats"] });
  });
});

describe("allowlist: honest controls still pass", () => {
  const list = [
    "make",
    "sh",
    "bash",
    "cat",
    "grep",
    "./stats",
    "timeout",
    "nice",
    "env",
    "xargs",
    "find",
    "eval",
  ];
  const allowed: [string, string[]][] = [
    ["make", ["make"]],
    ["make clean && make -j4 && cat results/stats.txt", ["make", "make", "cat"]],
    ["sh -c 'make && ./stats x'", ["sh", "make", "./stats"]],
    ["bash -ec 'make'", ["bash", "make"]],
    ["sh -xc 'make'", ["sh", "make"]],
    ["sh -Cc 'make'", ["sh", "make"]],
    ["bash -o pipefail -c 'make | cat'", ["bash", "make", "cat"]],
    ["bash --norc --noprofile -c 'make'", ["bash", "make"]],
    ["sh -c 'bash -c \"make && cat log\"'", ["sh", "bash", "make", "cat"]],
    ["sh -c 'make' < input.txt", ["sh", "make"]],
    ["cat x | sh -c 'grep y'", ["cat", "sh", "grep"]],
    ["make 2>&1 | grep -c error > out.txt", ["make", "grep"]],
    ["cat <<'EOF' > notes.txt\n$(not run)\nEOF", ["cat"]],
    ["timeout 600 make -j2", ["timeout", "make"]],
    ["nice -n 10 timeout -k 5 60 make", ["nice", "timeout", "make"]],
    ["env make", ["env", "make"]],
    ["env -i make", ["env", "make"]],
    ["find src -name '*.f90' -exec grep -l module {} +", ["find", "grep"]],
    ["find . -name '*.o' | xargs cat", ["find", "xargs", "cat"]],
    ["xargs -I{} grep {} data.txt < words", ["xargs", "grep"]],
    ["eval 'make; cat log'", ["eval", "make", "cat"]],
    ["out=results; make OUT=$out && cat $out/stats.txt", ["make", "cat"]],
    ['for f in *.txt; do cat "$f"; done', ["cat"]],
    ["n=3; echo_n=$((2 + 3)); make -j4", ["make"]],
    ["if grep -q x f; then make; fi", ["grep", "make"]],
    ["make -j$(nproc 2>/dev/null || echo 1)", []],
  ];
  for (const [command, programs] of allowed) {
    it(`allows ${JSON.stringify(command)}`, () => {
      const verdict = checkCommand(command, [...list, "nproc", "echo"]);
      expect(verdict).toMatchObject({ ok: true });
      if (verdict.ok && programs.length > 0) expect(verdict.programs).toEqual(programs);
    });
  }
});
