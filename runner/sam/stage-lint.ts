// What `scifi validate` can tell about a SAM's check stages before a run (docs/loop.md, Checks in
// stages): a compare stage that reads a file its folder never holds, or runs an output as code; a
// check that forces its own success; hidden assets no compare stage sees; a run stage that runs the
// agent's code and then a judging check asset in one script. ```compare``` and the
// older ```check hidden``` are one stage (isCompareStage), judged by the same rules.
import { dirname, relative, resolve, sep } from "node:path";
import { isCompareStage } from "./check-blocks.ts";
import { type CompareRead, compareRead } from "./compare-reads.ts";
import { programKind } from "./program-kinds.ts";
import { type AgentThenJudge, agentThenJudge } from "./run-stage-judge.ts";
import { lintCommands, wrappedProgram } from "./shell-lint.ts";
import type { Check, Diagnostic, SamMetadata, SamNode } from "./types.ts";

/** The top-level SAM file as the parser read it. */
export interface StageLintInput {
  /** Real path of the task folder (the top-level SAM's folder). */
  rootDir: string;
  /** The path as the caller gave it (used in diagnostics). */
  display: string;
  absolute: string;
  /** The file's text ("" when it could not be read). */
  text: string;
}

interface Located {
  file: string;
  line: number;
  check: Check;
  node: SamNode;
}

/**
 * What the stages of a SAM's checks can be told before a run: hidden_assets mean something only when
 * a compare stage sees them; a compare stage never sees the task folder, so one that names a file
 * of it (other than a check asset) or an output no run stage declares can never pass, and one that
 * runs an output runs the agent's file beside the reference; a check whose exit status is forced to
 * 0 passes whatever failed before it.
 */
export function stageDiagnostics(input: StageLintInput, root: SamNode, metadata: SamMetadata): Diagnostic[] {
  const found: Diagnostic[] = [];
  const all: Located[] = [];
  const walk = (node: SamNode): void => {
    const file = node.source.file === input.absolute ? input.display : node.source.file;
    for (const item of node.items)
      for (const check of item.checks) all.push({ file, line: check.line, check, node });
    node.children.forEach(walk);
  };
  walk(root);
  const compares = all.filter((c) => isCompareStage(c.check));
  const at = (where: { file: string; line: number }, severity: "error" | "warning", message: string) =>
    found.push({ file: where.file, line: where.line, column: 1, severity, message });
  if ((metadata.hiddenAssets ?? []).length > 0 && compares.length === 0) {
    const keyLine = input.text.split("\n").findIndex((line) => line.startsWith("hidden_assets:"));
    at(
      { file: input.display, line: keyLine + 1 || 1 },
      "warning",
      "hidden_assets are listed but no compare stage can see them: compare against them in a ```compare``` block (only compare stages see them; ```check``` blocks run the agent's work without them)",
    );
  }
  const samDir = dirname(input.absolute);
  const assets = metadata.checkAssets.map((a) =>
    relative(input.rootDir, resolve(samDir, a)).split(sep).join("/"),
  );
  // A run stage that runs the agent's code and then a judging asset: the judge's exit status is the agent's.
  for (const check of all) {
    if (isCompareStage(check.check)) continue;
    const judged = agentThenJudge(check.check.command, assets, input.rootDir);
    if (judged) at(check, "warning", agentThenJudgeMessage(judged));
  }
  if (compares.length > 0) {
    const outputsOf = (checks: readonly Check[]) =>
      checks.filter((c) => !isCompareStage(c)).flatMap((c) => c.outputs ?? []);
    for (const compare of compares) {
      const before = outputsOf(checksBefore(compare));
      const folder = {
        assets,
        declared: before,
        later: outputsOf(all.map((c) => c.check)).filter((o) => !before.includes(o)),
      };
      const runs = runsAnOutput(compare.check.command) ?? runsAnOutputInside(compare.check.command);
      const read = runs === undefined ? compareRead(compare.check.command, folder) : undefined;
      const problem = runs ?? (read && readProblem(read, runStageBefore(all, compare)));
      if (problem) at(compare, "error", problem);
    }
  }
  for (const check of all) {
    const forced = forcedSuccess(check.check.command);
    if (forced)
      at(
        check,
        "warning",
        `this check's exit status is forced to 0 by \`${forced}\`: whatever fails before it passes the check; remove it (checks run with bash -o pipefail, so a failing command anywhere in a pipeline fails the check)`,
      );
  }
  return found;
}

function agentThenJudgeMessage(found: AgentThenJudge): string {
  const where = found.inside ? ` (in check asset \`${found.inside}\`)` : "";
  return `this run stage runs the agent's code (\`${found.agent}\`) and then a check asset that judges (\`${found.judge}\`) in one script${where}: the judge runs beside the agent's code, so its exit status is the agent's to forge (a process left behind, a file swapped). Run the agent's work here and declare what it writes (\`\`\`check outputs=...\`), then judge that in a \`\`\`compare\`\`\` stage that reads \`outputs/...\` as data (docs/loop.md, Checks in stages)`;
}

/**
 * The checks that run before `compare` in every check phase that runs it (docs/loop.md): a phase
 * runs a node's subtree, children before their parent, in document order (run/checks/checks.ts
 * subtreeChecks), so those of its node's sub-SAMs and of its own items before it. A sibling's run
 * stage runs before it only when the parent is the node checked, so it does not count.
 */
function checksBefore(compare: Located): Check[] {
  const below = (node: SamNode): Check[] => [
    ...node.children.flatMap(below),
    ...node.items.flatMap((item) => item.checks),
  ];
  const own = compare.node.items.flatMap((item) => item.checks);
  return [...compare.node.children.flatMap(below), ...own.slice(0, own.indexOf(compare.check))];
}

/** The last run stage before `compare` in its SAM (the one whose outputs it should read), if any. */
function runStageBefore(all: readonly Located[], compare: Located): Located | undefined {
  return all
    .filter((c) => c.node === compare.node && !isCompareStage(c.check) && c.line < compare.line)
    .at(-1);
}

/** The error for a path a compare stage reads that its folder never holds. */
function readProblem(read: CompareRead, run: Located | undefined): string {
  const { word, rel } = read;
  const list = [...new Set([...(run?.check.outputs ?? []), rel])].join(",");
  const declares = run
    ? `declare it on the run stage at line ${run.line} (\`\`\`check outputs=${list}\`\`\`)`
    : `declare it in a run stage before this one that makes it (\`\`\`check outputs=${rel}\`\`\`)`;
  if (read.kind === "undeclared-output" && read.later)
    return `a compare stage reads \`${word}\`, but only a run stage after it declares \`${rel}\`: outputs/ holds what the run stages that ran before it in the check phase declared (sub-SAMs' checks first, then this SAM's in document order), so this check can never pass; ${declares}, or move this compare stage after the run stage that makes it`;
  if (read.kind === "undeclared-output")
    return `a compare stage reads \`${word}\`, but no run stage declares \`${rel}\`: outputs/ holds only what run stages declare with \`outputs=\`, so this check can never pass; ${declares}`;
  if (read.runs)
    return `a compare stage runs \`${word}\`, which is not a check asset: a compare stage never sees the task folder (only the check assets and, under outputs/, the run stages' declared outputs), so this check can never pass whether or not the file exists; list it in check_assets if it is the runner's program (the agent's code runs only in run stages: \`\`\`check\`\`\`)`;
  if (read.declared)
    return `a compare stage reads \`${word}\`, which is neither a check asset nor under outputs/: a compare stage never sees the task folder (only the check assets and, under outputs/, the run stages' declared outputs), so this check can never pass; a run stage declares it, so read it as \`outputs/${rel}\``;
  return `a compare stage reads \`${word}\`, which is neither a check asset nor under outputs/: a compare stage never sees the task folder (only the check assets and, under outputs/, the run stages' declared outputs), so this check can never pass whether or not the file exists; ${declares} and read \`outputs/${rel}\`, or list it in check_assets if it is the runner's file`;
}

/** Compilers, simulators and build tools: whatever they are given is built or run. */
const BUILDERS =
  /^(iverilog|vvp|verilator|gcc|g\+\+|cc|c\+\+|clang|clang\+\+|gfortran|f95|ld|make|gmake|cmake|java|javac|go|rustc|cargo)$/;
/** Builtins that run their argument as code. */
const SOURCING = /^(\.|source|eval|exec)$/;

/** An output's name that says it is code (a source file or a script), however it is passed on. */
const CODE_FILE =
  /\.(py|pyc|sh|bash|v|sv|vh|svh|vhd|vhdl|c|h|cc|cpp|cxx|hpp|f|f90|f95|f03|for|mod|so|o|a|r|R|jl|pl|pm|rb|js|mjs|cjs|ts|php|lua|m|tcl|mk|cmake|java|class|jar|go|rs)$/;

/**
 * A compare stage reads outputs as data (an argument of a check asset, or of a tool like cmp or
 * diff). One that runs an output, hands it to a shell, an interpreter, a compiler or a simulator as
 * what it runs, sources it, feeds it to a shell's input, or takes an output that is code at all, runs
 * the agent's code beside the reference. What it does instead, or undefined. A lint of the text: a
 * check asset that imports an output it is given is beyond it (docs/loop.md, Checks in stages).
 */
function runsAnOutput(command: string): string | undefined {
  const fix =
    "run the agent's code in a run stage (```check outputs=...```, no hidden asset there) and let the compare stage read only its results";
  for (const pipeline of command.split(/\n|;|&&|\|\||(?<![|])&(?![&])/)) {
    const stages = pipeline.split(/\|(?!\|)/);
    const hasOutput = stages.some((stage) => /(^|[\s'"=<(`])(\.\/|\/task\/)?outputs\//.test(stage));
    for (const [k, stage] of stages.entries()) {
      const all = shellWords(stage);
      const code = all.filter(isOutputPath).find((w) => CODE_FILE.test(w));
      if (code)
        return `a compare stage takes \`${code}\`, an output that is code: whatever reads it (a grader that imports it, a compiler, a simulator) runs the agent's code beside the reference; ${fix}`;
      // An array's values (`files=(a b)`) are no command; a wrapper's options, their values and its
      // leading operands (`timeout 10`, `xargs -a F`, `flock F`) come before what it runs.
      const plain = shellWords(stage.replace(/(^|\s)[A-Za-z_]\w*\+?=\([^)]*\)/g, "$1"));
      const words = plain.slice(wrappedProgram(plain).at);
      const first = words[0] ?? "";
      const program = basenameOf(first);
      const outputs = words.filter(isOutputPath);
      if (isOutputPath(first))
        return `a compare stage runs \`${first}\`, a file the agent's work made; ${fix}`;
      if (program === "cd" && outputs.length > 0)
        return `a compare stage changes into \`${outputs[0]}\`: the agent's files would be its working folder; read outputs by their path instead`;
      const kind = programKind(program);
      const runsArguments = SOURCING.test(program) || BUILDERS.test(program) || kind === "unchecked-runner";
      if (runsArguments && outputs.length > 0)
        return `a compare stage hands \`${outputs[0]}\` to \`${program}\`, which runs or builds it as code beside the reference; ${fix}`;
      // The same shells and interpreters the command allowlist knows (program-kinds.ts).
      if (kind !== "shell" && kind !== "interpreter") continue;
      const inline = words.includes("-c") || words.includes("-e");
      // `-` is the program read from the input (`python3 - outputs/r.txt <<'EOF'`): later words are its arguments.
      const script = words.slice(1).find((w) => w === "-" || !w.startsWith("-"));
      if (!inline && script !== undefined && isOutputPath(script))
        return `a compare stage hands \`${script}\` to \`${program}\`, which runs it as code beside the reference; ${fix}`;
      if (inline && /(\$\(|`)[^)`]*outputs\//.test(stage))
        return `a compare stage runs the text of an output as code (\`${program} -c\` with a substitution of it); ${fix}`;
      if (
        !inline &&
        (script === undefined || script === "-") &&
        (k > 0 ? hasOutput : /<\s*(\.\/|\/task\/)?outputs\//.test(stage))
      )
        return `a compare stage feeds an output to \`${program}\`'s input, which runs it as code beside the reference; ${fix}`;
    }
  }
  return undefined;
}

/** `runsAnOutput` of each script the command hands to a shell (`eval '…'`, `sh -c '…'`, `sh <<EOF`). */
function runsAnOutputInside(command: string): string | undefined {
  for (const { scripts } of lintCommands(command))
    for (const script of scripts ?? []) {
      const found = runsAnOutput(script);
      if (found) return found;
    }
  return undefined;
}

function basenameOf(word: string | undefined): string {
  return (word ?? "").split("/").at(-1) ?? "";
}

/** `outputs/x`, `./outputs/x`, or `/task/outputs/x` (/task is the compare stage's own folder). */
function isOutputPath(word: string): boolean {
  return /^(?:\.\/|\/task\/)?outputs(?:\/|$)/.test(word);
}

/** The words of a shell command, quotes removed, split at blanks and operators (a lint, not a parser). */
function shellWords(command: string): string[] {
  return command
    .split(/[\s;&|()<>]+/)
    .map((w) => w.replace(/^['"]|['"]$/g, ""))
    .filter((w) => w !== "");
}

/**
 * What forces a check's exit status to 0 whatever failed before it, if anything: `|| true`, `|| :`,
 * `|| exit 0`, `|| echo …`, `set +o pipefail`, a last command run in the background (`… &`), a last
 * `if` without `else`, or a last `true`, `:`, `exit 0`, `echo` or `printf` after other commands.
 */
function forcedSuccess(command: string): string | undefined {
  const or = /\|\|\s*(true|:|exit\s+0|echo|printf)(?=\s|;|\)|$)/m.exec(command);
  if (or) return or[0];
  const pipefail = /\bset\s+\+o\s+pipefail\b/.exec(command);
  if (pipefail) return pipefail[0];
  const text = command.trim();
  if (/(^|[^&])&\s*$/.test(text)) return "&";
  if (
    /(^|[;\n]\s*)if\b[\s\S]*\bfi$/.test(text) &&
    !/\belse\b/.test(text.slice(text.search(/(^|[;\n]\s*)if\b/)))
  )
    return "if … fi without else";
  // A check that is only `true` verifies nothing, but hides nothing either: that is for the review.
  const commands = text
    .split(/[;\n]/)
    .map((c) => c.trim())
    .filter(Boolean);
  const last = commands.at(-1) ?? "";
  if (commands.length > 1 && /^(true|:|exit 0|echo\b.*|printf\b.*)$/.test(last)) return last;
  return undefined;
}
