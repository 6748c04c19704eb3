// The little of a Harbor task's environment/Dockerfile that maps onto a SAM folder: WORKDIR (the
// agent's folder, `/app` by default) and COPY/ADD of plain files from the build context into it
// (the task's starting files). Every other instruction is returned as not mapped, with its line.

export interface DockerfileFacts {
  /** The last WORKDIR (absolute), or /app when none. */
  workdir: string;
  /**
   * Mappable copies: a source relative to environment/, a destination relative to the workdir, and
   * whether a file source goes *into* that folder (Docker: a destination ending in `/`, or several
   * sources); a folder source's contents always go into the destination.
   */
  copies: { from: string; to: string; into: boolean; line: number }[];
  /** Instructions that do not map: `line N: FROM python:3.11-slim`. */
  unmapped: { line: number; text: string }[];
}

export const DEFAULT_WORKDIR = "/app";

export function readDockerfile(text: string): DockerfileFacts {
  const facts: DockerfileFacts = { workdir: DEFAULT_WORKDIR, copies: [], unmapped: [] };
  // Join continuation lines first, remembering where each instruction starts.
  const instructions: { line: number; text: string }[] = [];
  let current: { line: number; text: string } | undefined;
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/\r$/, "");
    if (!current && (/^\s*#/.test(line) || line.trim() === "")) return;
    const continued = /\\\s*$/.test(line);
    const part = line.replace(/\\\s*$/, "");
    if (current) current.text += ` ${part.trim()}`;
    else current = { line: i + 1, text: part.trim() };
    if (!continued) {
      instructions.push(current);
      current = undefined;
    }
  });
  if (current) instructions.push(current);
  for (const ins of instructions) {
    const [word = "", ...rest] = ins.text.split(/\s+/);
    const op = word.toUpperCase();
    if (op === "WORKDIR" && rest.length === 1 && (rest[0] as string).startsWith("/")) {
      facts.workdir = (rest[0] as string).replace(/\/+$/, "") || "/";
      continue;
    }
    if (op === "COPY" || op === "ADD") {
      const args = rest.filter((a) => !a.startsWith("--"));
      const flags = rest.filter(
        (a) => a.startsWith("--") && !a.startsWith("--chown") && !a.startsWith("--chmod"),
      );
      const dest = args.at(-1) ?? "";
      const sources = args.slice(0, -1);
      const plain = (s: string) =>
        /^[A-Za-z0-9._/-]+$/.test(s) && !s.split("/").includes("..") && !s.startsWith("/");
      const to = relativeTo(facts.workdir, dest);
      if (
        flags.length === 0 &&
        sources.length > 0 &&
        sources.every(plain) &&
        to !== undefined &&
        !/^https?:/.test(sources[0] ?? "")
      ) {
        const into = dest.endsWith("/") || sources.length > 1 || to === "";
        for (const from of sources)
          facts.copies.push({ from: from.replace(/\/+$/, ""), to, into, line: ins.line });
        continue;
      }
    }
    facts.unmapped.push(ins);
  }
  return facts;
}

/** `dest` relative to `workdir` when it lies inside it (or is relative), else undefined. */
function relativeTo(workdir: string, dest: string): string | undefined {
  if (dest === "" || dest.split("/").includes("..")) return undefined;
  if (dest === "." || dest === "./") return "";
  if (!dest.startsWith("/")) return dest.replace(/^\.\//, "").replace(/\/+$/, "");
  const base = workdir === "/" ? "" : workdir;
  if (dest === base || dest === `${base}/`) return "";
  if (dest.startsWith(`${base}/`)) return dest.slice(base.length + 1).replace(/\/+$/, "");
  return undefined;
}
