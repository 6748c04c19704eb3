// Every bind value the runner builds from a path: Apptainer's `--bind` and `--mount` (the work
// sandbox, its hardening and proxy binds, a SLURM job's container) and Docker's `-v` (a job's
// container). Those are text a parser splits again: Apptainer reads `--bind` as a comma list (CSV:
// `"` quotes, `\` escapes) of `src[:dst[:opts]]`, `--mount` as `key=value` pairs split at commas,
// Docker's `-v` as `src:dst[:opts]`. A path holding one of those characters is read as more binds
// than the runner wrote: issue 38 (a38b), a task folder `fit,data` gave a SLURM job `data:/task`, a
// relative source resolved in the task folder, where the agent's link `data` reached the user's home.
// So a path is refused, naming it, unless it is absolute and free of every separator, quote, escape
// and control character; there is no quoting that all three parsers read alike.
import { PathRefused } from "./types.ts";

/** Separators, quotes and escapes of the bind syntaxes, and control characters (C0, DEL, C1). */
const UNBINDABLE = /[:,"\\\p{Cc}]/u;

/**
 * `path` when a bind value can carry it as one path; else PathRefused naming it. `why` says what the
 * path is (`the task folder`, `mount /data`) for the message.
 */
export function bindablePath(path: string, why: string): string {
  if (!path.startsWith("/"))
    throw new PathRefused(
      path,
      `a bind needs an absolute path (${why}); a relative one is resolved in whatever folder the engine runs in`,
    );
  const bad = UNBINDABLE.exec(path)?.[0];
  if (bad !== undefined) {
    const shown = /\p{Cc}/u.test(bad)
      ? `U+${bad.codePointAt(0)?.toString(16).toUpperCase().padStart(4, "0")}`
      : `'${bad}'`;
    throw new PathRefused(
      path,
      `Apptainer and Docker cannot bind a path containing ':' or ',' (they separate binds and their parts), '"' or '\\' (quote and escape) or a control character; this one holds ${shown} (${why}): rename or move it`,
    );
  }
  return path;
}

/** `src:dst[:mode]` for Apptainer's `--bind` or Docker's `-v`, both paths checked. */
export function bindSpec(source: string, target: string, mode: "ro" | "rw" | undefined, why: string): string {
  const spec = `${bindablePath(source, why)}:${bindablePath(target, why)}`;
  return mode ? `${spec}:${mode}` : spec;
}

/**
 * `type=bind,src=...,dst=...` for Apptainer's `--mount` (plus `extra`, the runner's own options):
 * `=` separates its keys from values too.
 */
export function mountSpec(source: string, target: string, extra: string, why: string): string {
  for (const path of [source, target])
    if (bindablePath(path, why).includes("="))
      throw new PathRefused(
        path,
        `Apptainer's --mount cannot carry a path containing '=' (${why}); rename or move it`,
      );
  return `type=bind,src=${source},dst=${target}${extra ? `,${extra}` : ""}`;
}
