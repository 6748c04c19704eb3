// Check blocks, the two kinds of stage of an Expectation item: ```check``` (a run stage, with
// `timeout=` and `outputs=`) and ```compare``` (a compare stage; ```check hidden``` is its older
// spelling). What each option means at run time is in docs/loop.md, Checks in stages.
import type { Code } from "mdast";
import type { DiagnosticSink } from "./diagnostics.ts";
import type { Check } from "./types.ts";
import { parseDuration } from "./units.ts";

/** Seconds a check may run when its block gives no `timeout=`. */
export const DEFAULT_CHECK_TIMEOUT_SEC = 300;

/** ```check``` (a run stage) and ```compare``` (a compare stage) are the two kinds of check block. */
export function isCheckFence(lang: string | null | undefined): boolean {
  const kind = lang?.toLowerCase();
  return kind === "check" || kind === "compare";
}

/**
 * A compare stage: ```compare```, or the older ```check hidden``` (a SAM parsed before stages keeps
 * `hidden` without `stage`). Every rule about compare stages asks this, so both spellings get one.
 */
export function isCompareStage(check: Pick<Check, "stage" | "hidden">): boolean {
  return check.stage === "compare" || check.hidden === true;
}

/** One check block: its stage, options (each problem a diagnostic at `offset`) and script. */
export function readCheck(sink: DiagnosticSink, offset: number, code: Code): Check {
  const options = (code.meta ?? "").split(/\s+/).filter(Boolean);
  // `hidden` anywhere makes the block a compare stage first: every later rule is the stage's, so
  // ```check hidden``` and ```compare``` are read alike whatever the options' order.
  const compare = code.lang?.toLowerCase() === "compare" || options.includes("hidden");
  let timeoutSec = DEFAULT_CHECK_TIMEOUT_SEC;
  let outputs: string[] | undefined;
  for (const option of options) {
    if (option === "hidden") continue;
    const declared = /^outputs=(.*)$/.exec(option);
    if (declared) {
      const parsed = parseOutputs(declared[1] ?? "");
      if (typeof parsed === "string") sink.error(offset, parsed);
      else outputs = [...(outputs ?? []), ...parsed];
      continue;
    }
    const timeout = /^timeout=(.*)$/.exec(option);
    const seconds = timeout ? parseDuration(timeout[1] ?? "") : undefined;
    if (seconds !== undefined) timeoutSec = seconds;
    else if (timeout) {
      sink.error(
        offset,
        `invalid check timeout \`${timeout[1]}\`; use a duration such as \`timeout=30s\` or \`timeout=5m\``,
      );
    } else sink.error(offset, unknownOption(option, compare));
  }
  if (compare && outputs) {
    sink.error(
      offset,
      "a compare stage (```compare``` or ```check hidden```) declares no outputs: it reads them; put `outputs=` on the ```check``` block that runs the agent's work",
    );
  }
  if (code.value.trim() === "") {
    sink.error(
      offset,
      compare
        ? "empty compare stage (```compare``` or ```check hidden```); write the shell command that must exit 0 when the item holds"
        : "empty `check` block; write the shell command that must exit 0 when the item holds",
    );
  }
  // A CRLF file must not hand `sh` commands ending in `\r`.
  return {
    id: "",
    command: code.value.replace(/\r\n?/g, "\n"),
    timeoutSec,
    ...(compare ? { stage: "compare" as const } : {}),
    ...(outputs && !compare ? { outputs } : {}),
    line: sink.position(offset).line,
  };
}

function unknownOption(option: string, compare: boolean): string {
  return compare
    ? `unknown compare stage option \`${option}\`; a compare stage (\`\`\`compare\`\`\` or \`\`\`check hidden\`\`\`) takes only \`timeout=<duration>\` (e.g. \`timeout=30s\`)`
    : `unknown check option \`${option}\`; the options are \`timeout=<duration>\` (e.g. \`timeout=30s\`), \`outputs=<path>,...\` (files the runner copies out for a compare stage) and \`hidden\` (the older spelling of a \`compare\` block)`;
}

/** Most outputs one run stage declares. */
const MAX_OUTPUTS = 32;

/**
 * `outputs=a,b`: task-folder paths, relative, each component a plain name (no `..`, no glob, no
 * empty or dot component), so the runner copies out exactly what was named. An error text otherwise.
 */
function parseOutputs(list: string): string[] | string {
  const paths = list.split(",").filter((p) => p !== "");
  if (paths.length === 0)
    return "`outputs=` names no file; write `outputs=result.json` or `outputs=out/a.csv,out/b.csv`";
  if (paths.length > MAX_OUTPUTS) return `\`outputs=\` names ${paths.length} files; at most ${MAX_OUTPUTS}`;
  for (const path of paths) {
    const parts = path.split("/");
    const bad =
      path.startsWith("/") ||
      Buffer.byteLength(path) > 255 ||
      parts.some((p) => p === "" || p === "." || p === ".." || /[*?[\]\\\0]/.test(p));
    if (bad)
      return `output \`${path}\` is not a plain relative path in the task folder (no leading /, no . or .., no globs, at most 255 bytes)`;
  }
  return [...new Set(paths)];
}
