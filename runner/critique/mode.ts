// The critique mode of a run: the SAM's `critique:` and the site policy's `critique:`, the stricter
// wins (a SAM cannot lower what the site asks); `approval: [critique]` asks for at least `approve`.
// Strictness: off < report < approve < block (block never lets a likely mismatch pass; approve lets
// a person accept one).
import { CRITIQUE_MODES, type CritiqueMode } from "./schema.ts";

export const DEFAULT_CRITIQUE_MODE: CritiqueMode = "report";

export function isCritiqueMode(value: unknown): value is CritiqueMode {
  return typeof value === "string" && (CRITIQUE_MODES as readonly string[]).includes(value);
}

export function stricter(a: CritiqueMode, b: CritiqueMode): CritiqueMode {
  return CRITIQUE_MODES.indexOf(a) >= CRITIQUE_MODES.indexOf(b) ? a : b;
}

/**
 * The mode a run uses. Absent keys count as the default (`report`) only when neither side names a
 * mode: a site that says `off` and a SAM that says nothing run without critique.
 */
export function effectiveCritiqueMode(options: {
  sam?: CritiqueMode;
  site?: CritiqueMode;
  approval?: readonly string[];
}): CritiqueMode {
  let mode: CritiqueMode =
    options.sam === undefined && options.site === undefined
      ? DEFAULT_CRITIQUE_MODE
      : stricter(options.sam ?? "off", options.site ?? "off");
  if (options.approval?.includes("critique")) mode = stricter(mode, "approve");
  return mode;
}
