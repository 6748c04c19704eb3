// The ask command body: gather the documents (spawning the real --help), ask, guard, print.
import { EXIT } from "../../exit-codes.ts";
import { homePaths, scifiHome } from "../../paths.ts";
import { loadSkills, skillDirs } from "../../skills/index.ts";
import { openOrExplain } from "../session.ts";
import { askScifi } from "./ask.ts";
import { collectHelp, sourceDocuments } from "./sources.ts";

export interface AskCommandOptions {
  model?: string;
  rank?: string;
  env?: NodeJS.ProcessEnv;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

export async function runAsk(question: string, options: AskCommandOptions): Promise<number> {
  const out = options.out ?? ((t: string) => process.stdout.write(t));
  const err = options.err ?? ((t: string) => process.stderr.write(t));
  const rank = Number(options.rank ?? "1");
  if (!question.trim()) {
    err("scifi ask: the question is empty\n");
    return EXIT.usage;
  }
  if (!Number.isInteger(rank) || rank < 1) {
    err(`scifi ask: --rank must be a whole number >= 1, got '${options.rank}'\n`);
    return EXIT.usage;
  }
  const home = scifiHome(options.env);
  const help = await collectHelp();
  const { skills } = loadSkills(skillDirs(homePaths(home).skills));
  const documents = sourceDocuments(help, skills);
  const session = await openOrExplain(
    {
      home,
      helper: "ask",
      ...(options.model ? { modelSpec: options.model } : {}),
      ...(options.env ? { env: options.env } : {}),
    },
    err,
  );
  if (typeof session === "number") return session;
  try {
    const result = await askScifi({
      question,
      model: session.model,
      runId: session.runId,
      documents,
      commands: [...help.commands.keys()],
      rank,
    });
    session.record("answer.md", result.text);
    out(result.text);
    if (result.leftOut.length > 0)
      err(
        `scifi ask: ${result.leftOut.length} of ${documents.length} documents were left out to fit the model's context window: ${result.leftOut.join("; ")}\n`,
      );
    err(session.tapeLine());
    // A flagged answer (invented command, no provided source) is shown, and the exit code says so.
    if (result.flagged) {
      err("scifi ask: the answer was flagged by the guard (see the notes at its top)\n");
      return EXIT.failed;
    }
    return EXIT.ok;
  } finally {
    await session.close();
  }
}
