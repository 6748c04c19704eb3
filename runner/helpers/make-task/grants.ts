// The task maker never grants resources on its own. Metadata keys that grant access (network, GPUs,
// mounts, a job system, scratch space) stay in a draft only when the user's request named them;
// everything else the model proposed is moved into YAML comments as suggestions for the user to
// confirm. This is enforced here, in code, not by the prompt.
import { isMap, isScalar, isSeq, parseDocument } from "yaml";
import type { SamMetadata } from "../../sam/types.ts";

/** Front-matter keys that grant a resource. */
export const GRANT_KEYS = ["network", "gpu", "mounts", "jobs", "keep_jobs", "scratch"] as const;
export type GrantKey = (typeof GRANT_KEYS)[number];

/** A grant the model proposed and the maker withheld. */
export interface WithheldGrant {
  key: GrantKey;
  /** The YAML the user would uncomment, e.g. `network: true`. */
  yaml: string;
  why: string;
}

/** What the request itself names, read deterministically from its words. */
export interface NamedGrants {
  network: boolean;
  gpu: boolean;
  jobs: boolean;
  scratch: boolean;
  /** Host paths written in the request (a mount is kept only for one of these). */
  paths: string[];
  /** The request asks for write access to a mounted path. */
  writableMounts: boolean;
}

export function namedGrants(request: string): NamedGrants {
  return {
    network: /\b(network|internet)\b/i.test(request),
    gpu: /\b(gpus?|cuda)\b/i.test(request),
    jobs: /\bslurm\b/i.test(request),
    scratch: /\bscratch\b/i.test(request),
    paths: [...request.matchAll(/(?:^|[\s"'`(])(\/[^\s"'`),;]+)/g)].map((m) =>
      (m[1] ?? "").replace(/[.:]$/, ""),
    ),
    writableMounts: /\b(read-write|writable|rw)\b/i.test(request),
  };
}

interface Split {
  yaml: string;
  body: string;
}

function split(text: string): Split | undefined {
  const lines = text.split("\n");
  if (lines[0]?.trim() !== "---") return undefined;
  const end = lines.findIndex((l, i) => i > 0 && l.trim() === "---");
  if (end < 0) return undefined;
  return { yaml: lines.slice(1, end).join("\n"), body: lines.slice(end + 1).join("\n") };
}

/**
 * Removes every grant the request did not name from the draft's front matter and returns the
 * rewritten draft plus the withheld grants (already written into it as comments).
 */
export function withholdGrants(draft: string, request: string): { text: string; withheld: WithheldGrant[] } {
  const parts = split(draft);
  if (!parts) return { text: draft, withheld: [] };
  const doc = parseDocument(parts.yaml);
  if (doc.errors.length > 0 || !isMap(doc.contents)) return { text: draft, withheld: [] };
  const named = namedGrants(request);
  const withheld: WithheldGrant[] = [];
  for (const key of GRANT_KEYS) {
    if (!doc.has(key)) continue;
    const value: unknown = doc.get(key, false);
    const keep = decide(key, value, named, doc.toJS() as Record<string, unknown>);
    if (keep.kind === "keep") continue;
    if (keep.kind === "replace") doc.set(key, keep.value);
    else doc.delete(key);
    withheld.push(...keep.withheld);
  }
  if (withheld.length === 0) return { text: draft, withheld };
  const kept =
    isMap(doc.contents) && doc.contents.items.length > 0 ? doc.toString().replace(/\n*$/, "\n") : "";
  const comments = [
    "# Suggested grants: NOT granted. The task maker thinks the task may need them, but the request",
    "# did not ask for them. Review each, then uncomment it to grant it.",
    ...withheld.map((w) => `# ${w.yaml}    # ${w.why}`),
  ].join("\n");
  return { text: `---\n${kept}${comments}\n---\n${parts.body}`, withheld };
}

type Decision =
  | { kind: "keep" }
  | { kind: "drop"; withheld: WithheldGrant[] }
  | { kind: "replace"; value: unknown; withheld: WithheldGrant[] };

function decide(key: GrantKey, node: unknown, named: NamedGrants, data: Record<string, unknown>): Decision {
  const value = data[key];
  const line = (v: unknown) => `${key}: ${JSON.stringify(v)}`;
  const drop = (why: string): Decision => ({ kind: "drop", withheld: [{ key, yaml: line(value), why }] });
  switch (key) {
    case "network":
      return value === false || named.network
        ? { kind: "keep" }
        : drop("the request does not mention network access");
    case "gpu":
      return value === 0 || named.gpu ? { kind: "keep" } : drop("the request does not mention a GPU");
    case "jobs":
    case "keep_jobs":
      return named.jobs || value === false ? { kind: "keep" } : drop("the request does not mention SLURM");
    case "scratch":
      return named.scratch ? { kind: "keep" } : drop("the request does not mention scratch space");
    case "mounts":
      return decideMounts(node, named);
  }
}

/** Keeps mounts whose host path the request names (read-only unless it asks for write access). */
function decideMounts(node: unknown, named: NamedGrants): Decision {
  if (!isSeq(node))
    return { kind: "drop", withheld: [{ key: "mounts", yaml: "mounts: []", why: "not a list" }] };
  const kept: unknown[] = [];
  const withheld: WithheldGrant[] = [];
  for (const item of node.items) {
    const mount = readMount(isScalar(item) ? item.value : (item as { toJSON(): unknown }).toJSON());
    if (!mount) continue;
    const host = mount.host.replace(/\/+$/, "");
    if (!named.paths.some((p) => p.replace(/\/+$/, "") === host)) {
      withheld.push({
        key: "mounts",
        yaml: `mounts: ["${mount.host}:${mount.container}:ro"]`,
        why: `the request does not name ${mount.host}`,
      });
      continue;
    }
    const mode = mount.mode === "rw" && named.writableMounts ? "rw" : "ro";
    if (mount.mode === "rw" && mode === "ro") {
      withheld.push({
        key: "mounts",
        yaml: `mounts: ["${mount.host}:${mount.container}:rw"]`,
        why: "mounted read-only: the request does not ask for write access",
      });
    }
    kept.push(`${mount.host}:${mount.container}:${mode}`);
  }
  if (withheld.length === 0) return { kind: "keep" };
  return kept.length > 0 ? { kind: "replace", value: kept, withheld } : { kind: "drop", withheld };
}

function readMount(value: unknown): { host: string; container: string; mode: string } | undefined {
  if (typeof value === "string") {
    const [host, container, mode] = value.split(":");
    if (!host) return undefined;
    return { host, container: container ?? host, mode: mode ?? "ro" };
  }
  if (value && typeof value === "object") {
    const m = value as Record<string, unknown>;
    if (typeof m.host !== "string") return undefined;
    return {
      host: m.host,
      container: typeof m.container === "string" ? m.container : m.host,
      mode: m.mode === "rw" ? "rw" : "ro",
    };
  }
  return undefined;
}

/**
 * The final gate before a draft is written: throws if the parsed metadata grants anything the
 * request did not name. `withholdGrants` makes this unreachable; the check keeps it so.
 */
export function assertOnlyNamedGrants(metadata: SamMetadata, request: string): void {
  const named = namedGrants(request);
  const problems: string[] = [];
  if (metadata.network && !named.network) problems.push("network");
  if (metadata.gpu > 0 && !named.gpu) problems.push("gpu");
  if (metadata.jobs !== undefined && !named.jobs) problems.push("jobs");
  if (metadata.keepJobs && !named.jobs) problems.push("keep_jobs");
  if (metadata.scratchBytes !== undefined && !named.scratch) problems.push("scratch");
  for (const m of metadata.mounts) {
    const host = m.host.replace(/\/+$/, "");
    if (!named.paths.some((p) => p.replace(/\/+$/, "") === host)) problems.push(`mount ${m.host}`);
    if (m.mode === "rw" && !named.writableMounts) problems.push(`write access to ${m.host}`);
  }
  if (problems.length > 0) {
    throw new Error(
      `refusing to write a draft that grants what the request did not name: ${problems.join(", ")}`,
    );
  }
}
