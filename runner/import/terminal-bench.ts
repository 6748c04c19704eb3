// The older Terminal-Bench layout (task.yaml, Dockerfile and docker-compose.yaml at the top,
// run-tests.sh, tests/, solution.sh), read into the same HarborConfig as task.toml, so both layouts
// give the same SAM. task.yaml's keys: `instruction` (or `descriptions`, a list of {key,
// description} where `base` is the task), `difficulty`, `max_agent_timeout_sec`,
// `max_test_timeout_sec`; the rest (author_email, tags, parser_name, ...) is listed as not mapped.
import { isMap, isScalar, isSeq, parseDocument, YAMLParseError } from "yaml";
import { type HarborConfig, HarborImportError } from "./harbor-config.ts";

export interface TerminalBenchTask {
  config: HarborConfig;
  instruction: string;
  /** Where the instruction was read (`task.yaml instruction`). */
  instructionFrom: string;
}

export function readTerminalBenchYaml(text: string, file: string): TerminalBenchTask {
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  const problem = doc.errors[0];
  if (problem) {
    const pos = problem instanceof YAMLParseError ? problem.pos[0] : 0;
    const before = text.slice(0, pos);
    const at = `:${before.split("\n").length}:${pos - before.lastIndexOf("\n")}`;
    throw new HarborImportError(`${file}${at}: not valid YAML: ${problem.message.split("\n")[0]}`);
  }
  if (!isMap(doc.contents))
    throw new HarborImportError(
      `${file}: must be a mapping of keys (instruction, difficulty, ...), got ${doc.contents ? "something else" : "an empty file"}`,
    );
  const lineOf = (node: unknown): string => {
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (!range) return "";
    return `:${text.slice(0, range[0]).split("\n").length}`;
  };
  const config: HarborConfig = { env: [], users: [], steps: 0, unknown: [] };
  let instruction: string | undefined;
  let instructionFrom = "task.yaml instruction";
  for (const pair of doc.contents.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
    const value = pair.value;
    const at = `${file}${lineOf(pair.key)}: ${key}`;
    const scalar = isScalar(value) ? value.value : undefined;
    switch (key) {
      case "instruction":
        if (typeof scalar !== "string")
          throw new HarborImportError(`${at} must be text (the task for the agent)`);
        instruction = scalar;
        break;
      case "descriptions": {
        if (!isSeq(value)) throw new HarborImportError(`${at} must be a list of {key, description}`);
        const items = value.toJSON() as { key?: unknown; description?: unknown }[];
        const base = items.find((d) => d?.key === "base") ?? items[0];
        if (typeof base?.description !== "string")
          throw new HarborImportError(`${at}: no entry with key "base" and a text description`);
        instruction = base.description;
        instructionFrom = `task.yaml descriptions (key ${JSON.stringify(base.key ?? "first")})`;
        if (items.length > 1)
          config.unknown.push(`descriptions other than ${JSON.stringify(base.key ?? "the first")}`);
        break;
      }
      case "difficulty":
        if (typeof scalar !== "string") throw new HarborImportError(`${at} must be text like "medium"`);
        config.difficulty = scalar;
        break;
      case "max_agent_timeout_sec":
      case "max_test_timeout_sec": {
        if (typeof scalar !== "number" || !Number.isFinite(scalar) || scalar <= 0)
          throw new HarborImportError(
            `${at} must be a positive number of seconds (e.g. 180), got ${JSON.stringify(value?.toJSON?.() ?? scalar)}`,
          );
        if (key === "max_agent_timeout_sec") config.agentTimeoutSec = scalar;
        else config.verifierTimeoutSec = scalar;
        break;
      }
      default:
        // Named, never copied: tags, author_email, parser_name, run_tests_in_same_shell, ...
        config.unknown.push(key);
    }
  }
  if (instruction === undefined)
    throw new HarborImportError(
      `${file}: no \`instruction\` (the task for the agent); a Terminal-Bench task.yaml has \`instruction: |\` and the text below it`,
    );
  return { config, instruction, instructionFrom };
}
