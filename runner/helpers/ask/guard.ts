// The answer guard: deterministic checks on what the model wrote. Every `scifi <command>` written
// as a command (in inline code or a code block) must be a real command of the installed CLI; an
// invented one is flagged in the answer. Cited sources must be documents that were provided.

export interface GuardResult {
  /** The answer as shown to the user (with notices added). */
  text: string;
  /** Command names the answer used that do not exist. */
  unknownCommands: string[];
  /** Cited document ids that were provided. */
  sources: string[];
  /** Cited ids that were not among the documents. */
  unknownSources: string[];
  /** Any notice was added (an invented command, no provided source cited, an unknown source). */
  flagged: boolean;
}

/** Text the user would type: inline code spans and fenced code blocks. */
function codeSpans(markdown: string): string[] {
  const spans: string[] = [];
  const withoutBlocks = markdown.replace(
    /^(```|~~~)[^\n]*\n([\s\S]*?)^\1[ \t]*$/gm,
    (_, _fence, body: string) => {
      spans.push(body);
      return "";
    },
  );
  for (const m of withoutBlocks.matchAll(/`([^`\n]+)`/g)) spans.push(m[1] ?? "");
  return spans;
}

/** Command names used as `scifi <name>` (or `npx scifi <name>`) in code. */
export function mentionedCommands(markdown: string): string[] {
  const names = new Set<string>();
  for (const span of codeSpans(markdown)) {
    for (const m of span.matchAll(/(?:^|[\s;&|(`$])(?:npx\s+)?scifi\s+([a-z][a-z0-9-]*)/gm))
      names.add(m[1] ?? "");
  }
  return [...names];
}

/**
 * Ids listed after the answer's last `Sources:` (separated by `;` or `,`): on a line of its own, or
 * standing at the end of the answer's last line ("... with scifi validate. Sources: README.md").
 */
export function citedSources(markdown: string): string[] {
  const lines = [...markdown.matchAll(/(?:^|[\s.;:)])\**sources?\**\s*:\s*(.+)$/gim)];
  const line = lines.at(-1);
  if (!line?.[1]) return [];
  return line[1]
    .split(/[;,]/)
    .map((s) =>
      s
        .replace(/[`*[\]]/g, "")
        .trim()
        .replace(/\.$/, ""),
    )
    .filter(Boolean);
}

export function guardAnswer(
  answer: string,
  commands: readonly string[],
  documentIds: readonly string[],
): GuardResult {
  const known = new Set([...commands, "help"]);
  const unknownCommands = mentionedCommands(answer).filter((c) => !known.has(c));
  const cited = citedSources(answer);
  const ids = new Set(documentIds);
  const sources = cited.filter((s) => ids.has(s));
  const unknownSources = cited.filter((s) => !ids.has(s));
  const notices: string[] = [];
  for (const name of unknownCommands) {
    notices.push(
      `> **Checked against \`scifi --help\`: there is no \`scifi ${name}\` command.** The commands are: ${commands.map((c) => `\`${c}\``).join(", ")}.`,
    );
  }
  if (sources.length === 0) {
    notices.push("> **This answer cites none of the provided documents; treat it with care.**");
  }
  for (const s of unknownSources) notices.push(`> Cited "${s}" is not one of the provided documents.`);
  const text = notices.length > 0 ? `${notices.join("\n>\n")}\n\n${answer.trim()}\n` : `${answer.trim()}\n`;
  return { text, unknownCommands, sources, unknownSources, flagged: notices.length > 0 };
}
