// The validation hook for `scifi validate`: skills named in a SAM's metadata must exist, and should be
// usable with what the SAM grants.
import { readFileSync } from "node:fs";
import type { Diagnostic, SamDocument } from "../sam/types.ts";
import { grantsOf, missingGrants } from "./library.ts";
import { didYouMean } from "./suggest.ts";
import type { Skill } from "./types.ts";

/** GRANT -> the metadata that grants it, for the fix hint. */
const HOW_TO_GRANT = { network: "network: true", jobs: "jobs: slurm", gpu: "gpu: 1" } as const;

/**
 * One error per unknown skill name (with a suggestion), and one warning per named skill whose
 * requirements the SAM does not grant (it would silently not be offered).
 */
export function checkSkillNames(
  sam: Pick<SamDocument, "file" | "metadata">,
  skills: readonly Skill[],
  samText?: string,
): Diagnostic[] {
  const names = skills.map((s) => s.name);
  const grants = grantsOf(sam.metadata);
  const text = samText ?? readText(sam.file);
  const diagnostics: Diagnostic[] = [];
  for (const name of sam.metadata.skills) {
    const where = locate(text, name);
    const skill = skills.find((s) => s.name === name);
    if (!skill) {
      const available = names.length > 0 ? `; available skills: ${names.join(", ")}` : "";
      diagnostics.push({
        file: sam.file,
        ...where,
        severity: "error",
        message: `unknown skill '${name}'${didYouMean(name, names)}${available}`,
      });
      continue;
    }
    const missing = missingGrants(skill, grants);
    if (missing.length > 0) {
      diagnostics.push({
        file: sam.file,
        ...where,
        severity: "warning",
        message: `skill '${name}' requires ${missing.join(", ")}, which this SAM does not grant, so it will not be offered; add ${missing.map((g) => `'${HOW_TO_GRANT[g]}'`).join(" and ")} to the metadata or drop the skill`,
      });
    }
  }
  return diagnostics;
}

function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** Line and column of the skill name inside the front matter (after the `skills` key), else 1:1. */
function locate(text: string, name: string): { line: number; column: number } {
  const lines = text.split("\n");
  const end = lines.findIndex((l, i) => i > 0 && l.trim() === "---");
  const start = lines.findIndex((l) => /^skills\s*:/.test(l));
  if (start < 0 || (end >= 0 && start > end)) return { line: 1, column: 1 };
  const pattern = new RegExp(
    `(^|[\\s,\\[\\-'"])${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?=$|[\\s,\\]'"])`,
  );
  for (let i = start; i < (end >= 0 ? end : lines.length); i++) {
    if (i > start && /^\S/.test(lines[i] ?? "")) break;
    const match = pattern.exec(lines[i] ?? "");
    if (match) return { line: i + 1, column: match.index + (match[1] ?? "").length + 1 };
  }
  return { line: start + 1, column: 1 };
}
