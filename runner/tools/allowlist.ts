// Per-SAM command allowlist for the bash tool: it reads what it allows, or refuses. The command is
// parsed by a real shell parser (mvdan/sh), so every simple command is seen wherever it hides:
// after newlines, `;`, `&&`, `||`, in pipes, subshells, blocks, functions, `$(...)`, backticks,
// process substitution, here-documents and assignments. This file parses and reads the shell's own
// syntax (assignments, declarations, arithmetic, tests, expansions); each command found goes to the
// program rules (allowlist-programs.ts), which follow code handed to a program (`sh -c`, `eval`,
// wrappers) back into this walker; the record and its explanation are in allowlist-check.ts. Rules
// and the reasons behind them: docs/sam-format.md, "allow_commands".
import sh, { type ShNode, type ShWord } from "mvdan-sh";
import { ARITHMETIC_VARIABLE, type Check, describe, MAX_DEPTH } from "./allowlist-check.ts";
import { checkArgv } from "./allowlist-programs.ts";
import { refusedName, wordArg, writableName } from "./allowlist-words.ts";

export type AllowVerdict = { ok: true; programs: string[] } | { ok: false; reason: string };

export function checkCommand(command: string, allowed: readonly string[]): AllowVerdict {
  const check = newCheck(allowed, 0);
  checkScript(command, check);
  const reason = describe(check);
  if (reason === undefined) return { ok: true, programs: check.programs };
  return { ok: false, reason: `${reason}. Allowed programs: ${allowed.join(", ")}.` };
}

function newCheck(allowed: readonly string[], depth: number): Check {
  return { allowed, depth, programs: [], unlisted: [], refusals: [], nested: checkNested };
}

function checkScript(script: string, check: Check): undefined {
  let file: ShNode;
  try {
    file = sh.syntax.NewParser().Parse(script, "command");
  } catch (error) {
    check.refusals.push(`the command does not parse as a shell script (${describeError(error)})`);
    return;
  }
  sh.syntax.Walk(file, (node) => {
    if (node) visit(node, check);
    return true;
  });
}

/** Checks a script found inside a command (`sh -c`, `eval`, `trap`), one level deeper. */
function checkNested(script: string, label: string, check: Check): undefined {
  if (check.depth >= MAX_DEPTH) {
    check.refusals.push(`'${label}' nested more than ${MAX_DEPTH} levels deep`);
    return;
  }
  const inner = newCheck(check.allowed, check.depth + 1);
  checkScript(script, inner);
  check.programs.push(...inner.programs);
  const reason = describe(inner);
  if (reason !== undefined) check.refusals.push(`inside '${label}': ${reason}`);
}

function visit(node: ShNode, check: Check): undefined {
  switch (sh.syntax.NodeType(node)) {
    case "CallExpr":
      return visitCall(node, check);
    case "DeclClause":
      return visitDecl(node, check);
    case "ParamExp":
      return visitParamExp(node, check);
    case "BinaryArithm":
    case "UnaryArithm":
      return visitArithm(node, check);
    case "ArithmExp":
    case "ArithmCmd":
    case "LetClause":
    case "CStyleLoop":
      if (readsVariable(node)) check.refusals.push(ARITHMETIC_VARIABLE);
      return;
    case "ArrayElem":
      // `a=([y]=1)`: the key of an indexed array is arithmetic.
      if (!plainSubscript(node.Index as ShWord | null)) check.refusals.push(ARITHMETIC_VARIABLE);
      return;
    case "WordIter": {
      // `for PATH in /tmp/x; do make; done` assigns the loop variable.
      const name = String((node.Name as ShNode | null)?.Value ?? "");
      if (!writableName(name)) check.refusals.push(refusedName(name));
      return;
    }
    case "BinaryTest":
    case "UnaryTest":
      return visitTest(node, check);
    case "Lit":
    case "SglQuoted":
      if (SUBSCRIPT_CODE.test(String(node.Value ?? ""))) check.refusals.push(SUBSCRIPT_REFUSAL);
      return;
    default:
      return;
  }
}

function visitCall(node: ShNode, check: Check): undefined {
  const words = (node.Args as ShWord[] | null) ?? [];
  const assigns = (node.Assigns as ShNode[] | null) ?? [];
  if (words.length === 0) {
    // `a=1` on its own line sets a shell variable: fine for a script's own (lower-case) names.
    for (const assign of assigns) checkAssignName(assign, check);
    return;
  }
  if (assigns.length > 0) {
    const names = assigns.map((a) => String((a.Name as ShNode | null)?.Value ?? "")).join(" ");
    check.refusals.push(
      `a variable assignment in front of a command ('${names}=... ${words[0]?.Lit() || "program"}') sets the program's environment (PATH, LD_PRELOAD, BASH_ENV, ENV...): drop it, or pass the setting as an argument (make FC=gfortran)`,
    );
  }
  checkArgv(words.map(wordArg), check, "closed");
}

/** `export`, `declare`, `local`, `readonly`, `typeset`: the keyword must be listed, names writable. */
function visitDecl(node: ShNode, check: Check): undefined {
  const variant = String((node.Variant as { Value?: string } | undefined)?.Value ?? "declare");
  if (!check.allowed.includes(variant)) check.unlisted.push(`'${variant}'`);
  else check.programs.push(variant);
  for (const assign of (node.Args as ShNode[] | null) ?? []) {
    const flag = assign.Naked && !assign.Name ? wordArg(assign.Value as ShNode).text : undefined;
    if (flag !== undefined) {
      // `declare -n ref=PATH` makes every later `ref=...` write PATH; `-i` evaluates values as
      // arithmetic; a quoted `'a[$(id)]=1'` is a name bash evaluates.
      if (flag === null || !/^[-+][a-zA-Z]+$/.test(flag) || /[ni]/.test(flag))
        check.refusals.push(
          `'${variant} ${flag ?? "$..."}': write names as plain words, with flags other than -n (nameref) and -i (arithmetic)`,
        );
      continue;
    }
    checkAssignName(assign, check);
  }
}

function checkAssignName(assign: ShNode, check: Check): undefined {
  const name = String((assign.Name as ShNode | null)?.Value ?? "");
  if (!writableName(name)) check.refusals.push(refusedName(name));
  // `a[y]=1`: the subscript is arithmetic, evaluated with y's text.
  if (!plainSubscript(assign.Index as ShWord | null)) check.refusals.push(ARITHMETIC_VARIABLE);
}

/** `${X=v}`, `${X:=v}` assign; `${x@P}` runs the value as a prompt string (with `$(...)`). */
function visitParamExp(node: ShNode, check: Check): undefined {
  if (!plainSubscript(node.Index as ShWord | null) || sliceReadsVariable(node.Slice as ShNode | null))
    check.refusals.push(ARITHMETIC_VARIABLE);
  const exp = node.Exp as { Op?: number; Word?: ShWord | null } | null;
  if (!exp) return;
  const name = String((node.Param as ShNode | null)?.Value ?? "");
  if ((exp.Op === 74 || exp.Op === 75) && !writableName(name)) check.refusals.push(refusedName(name));
  if (exp.Op === 84 && (exp.Word?.Lit() ?? "").includes("P"))
    check.refusals.push(`'\${${name}@P}' expands the variable's text as code: leave out @P`);
}

/** The same attack written out: text like `a[$(curl x)]` that bash may evaluate as a subscript. */
const SUBSCRIPT_CODE = /\[[^\]]*(\$\(|`)/;
const SUBSCRIPT_REFUSAL =
  "text like 'a[$(...)]' (bash runs the command when it evaluates the text as an array subscript): write the command itself";
/** `-eq`, `-ne`, `-le`, `-ge`, `-lt`, `-gt` in `[[ ]]`, and `-v NAME`. */
const TEST_ARITHMETIC = new Set([116, 117, 118, 119, 120, 121]);
const TEST_IS_SET = 110;

function readsVariable(node: ShNode): boolean {
  let found = false;
  sh.syntax.Walk(node, (inner) => {
    if (!inner || found) return false;
    const type = sh.syntax.NodeType(inner);
    if (type === "ParamExp" || type === "CmdSubst") found = true;
    else if (type === "Word" && !/^[0-9]*$/.test((inner as ShWord).Lit())) found = true;
    return !found;
  });
  return found;
}

function visitTest(node: ShNode, check: Check): undefined {
  const op = Number(node.Op);
  if (sh.syntax.NodeType(node) === "BinaryTest" && TEST_ARITHMETIC.has(op)) {
    if (readsVariable(node.X as ShNode) || readsVariable(node.Y as ShNode))
      check.refusals.push(ARITHMETIC_VARIABLE);
  } else if (op === TEST_IS_SET && !/^[A-Za-z_][A-Za-z0-9_]*$/.test((node.X as ShWord | null)?.Lit() ?? ""))
    check.refusals.push(`'[[ -v ... ]]' of a word that is not a plain name: ${ARITHMETIC_VARIABLE}`);
}

function plainSubscript(index: ShWord | null): boolean {
  return !index || /^([0-9]+|@|\*)$/.test(index.Lit());
}

function sliceReadsVariable(slice: ShNode | null): boolean {
  if (!slice) return false;
  return [slice.Offset, slice.Length].some((part) => part && readsVariable(part as ShNode));
}

/** Assignment operators in `$((...))`, `((...))` and `let`: `=`, `+=` ... `>>=`. */
const ARITHM_ASSIGN = new Set([74, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53]);
const ARITHM_STEP = new Set([36, 37]); // ++, --

function visitArithm(node: ShNode, check: Check): undefined {
  const op = Number(node.Op);
  const isAssign = sh.syntax.NodeType(node) === "BinaryArithm" ? ARITHM_ASSIGN.has(op) : ARITHM_STEP.has(op);
  if (!isAssign) return;
  const target = node.X as ShNode | null;
  if (!target || sh.syntax.NodeType(target) !== "Word") return;
  const name = (target as ShWord).Lit();
  if (!writableName(name)) check.refusals.push(refusedName(name || "an expanded name"));
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "object" && error !== null && "Error" in error) {
    const fn = (error as { Error: unknown }).Error;
    if (typeof fn === "function") return String(fn.call(error));
  }
  return String(error);
}
