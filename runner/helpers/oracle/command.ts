// The oracle command body: parse the SAM (no LLM), ask the oracle, print Markdown or stable JSON.
import { EXIT } from "../../exit-codes.ts";
import { scifiHome } from "../../paths.ts";
import { checkSam } from "../../sam/gate.ts";
import { gateOptions } from "../../skills/sam-gate.ts";
import { openOrExplain } from "../session.ts";
import { OracleFailed, runOracle } from "./oracle.ts";
import { oracleJson, oracleMarkdown } from "./render.ts";

export interface OracleCommandOptions {
  json?: boolean;
  templated?: boolean;
  model?: string;
  rank?: string;
  env?: NodeJS.ProcessEnv;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

export async function runOracleCommand(task: string, options: OracleCommandOptions): Promise<number> {
  const out = options.out ?? ((t: string) => process.stdout.write(t));
  const err = options.err ?? ((t: string) => process.stderr.write(t));
  const rank = Number(options.rank ?? "1");
  if (!Number.isInteger(rank) || rank < 1) {
    err(`scifi oracle: --rank must be a whole number >= 1, got '${options.rank}'\n`);
    return EXIT.usage;
  }
  // The gate every entry point runs (runner/sam/gate.ts), skill names included.
  const parsed = checkSam(task, gateOptions(scifiHome(options.env)));
  if (!parsed.ok) {
    err(`scifi oracle: ${task} is not a valid SAM; fix it first (scifi validate ${task}):\n`);
    for (const d of parsed.diagnostics)
      err(`  ${d.file}:${d.line}:${d.column}: ${d.severity}: ${d.message}\n`);
    return EXIT.usage;
  }
  const session = await openOrExplain(
    {
      home: scifiHome(options.env),
      helper: "oracle",
      ...(options.model ? { modelSpec: options.model } : {}),
      ...(options.env ? { env: options.env } : {}),
    },
    err,
  );
  if (typeof session === "number") return session;
  try {
    const report = await runOracle({
      sam: parsed.sam,
      taskPath: task,
      model: session.model,
      runId: session.runId,
      templated: options.templated ?? false,
      rank,
    });
    const json = oracleJson(report);
    session.record("oracle.json", json);
    out(options.json ? json : oracleMarkdown(report));
    err(session.tapeLine());
    return EXIT.ok;
  } catch (error) {
    if (!(error instanceof OracleFailed)) throw error;
    err(
      `scifi oracle: ${error.message}; last problems:\n${error.problems.map((p) => `  - ${p}\n`).join("")}`,
    );
    err(session.tapeLine());
    return EXIT.failed;
  } finally {
    await session.close();
  }
}
