// The metadata schema: exactly the documented keys (snake_case in YAML), each validated with zod
// and normalised (units to seconds, bytes, USD). Errors point at the offending key or value and say
// what was expected with an example; unknown keys get a "did you mean".
// (Just over 500 lines: one schema, the keys' validators beside the table that lists them.)
import { z } from "zod";
import {
  APPROVAL_ACTIONS,
  type ApprovalAction,
  isApprovalAction,
  notEnforcedMessage,
  unknownActionMessage,
} from "./approval-actions.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { parseHostRule } from "./host-rules.ts";
import { closest } from "./suggest.ts";
import type { MountRequest, SamMetadata } from "./types.ts";
import { durationSuggestion, parseDuration, parseSize, parseUsd } from "./units.ts";
import type { MetaDoc, MetaNode } from "./yaml-fast.ts";

/** What a value failed on: a plain type mismatch or a string that is not a valid unit/value. */
type Outcome<T> = { ok: true; value: T } | { ok: false; message: string };

interface KeySpec {
  /** Human description of the expected value, used in type errors. */
  expected: string;
  example: string;
  /** Validates the YAML node (value already converted to JS) and stores it into the metadata. */
  apply: (meta: SamMetadata, value: unknown, node: MetaNode, ctx: KeyContext) => void;
}

interface KeyContext {
  key: string;
  sink: DiagnosticSink;
  at: (node: MetaNode | null | undefined) => number;
  spec: KeySpec;
  /** Offsets of list items, for keys whose items are checked later (subtasks, check_assets). */
  itemOffsets: Map<string, number[]>;
}

const SLUG = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const slug = z.string().regex(SLUG).max(128);
const nameList = z.array(slug);
const positiveInt = z.number().int().positive();
const relativePath = z.string().min(1);

function typeError(ctx: KeyContext, node: MetaNode | null | undefined, value: unknown): void {
  ctx.sink.error(
    ctx.at(node),
    `\`${ctx.key}\`: expected ${ctx.spec.expected}, got ${describe(value)}; for example \`${ctx.spec.example}\``,
  );
}

/** A key whose value is checked by a zod schema alone. */
function simple<T>(
  schema: z.ZodType<T>,
  expected: string,
  example: string,
  store: (m: SamMetadata, v: T) => void,
): KeySpec {
  return {
    expected,
    example,
    apply(meta, value, node, ctx) {
      const parsed = schema.safeParse(value);
      if (parsed.success) store(meta, parsed.data);
      else typeError(ctx, node, value);
    },
  };
}

/** `network`: a boolean, or a list of host rules (`host`, `*.host`, either with `:port`). */
function applyNetwork(meta: SamMetadata, value: unknown, node: MetaNode, ctx: KeyContext): void {
  if (typeof value === "boolean") {
    meta.network = value;
    return;
  }
  const items = node.items;
  if (!Array.isArray(value) || !items) {
    typeError(ctx, node, value);
    return;
  }
  const hosts: string[] = [];
  value.forEach((item, i) => {
    const rule = typeof item === "string" ? parseHostRule(item) : undefined;
    if (rule) hosts.push(rule.text);
    else
      ctx.sink.error(
        ctx.at(items[i]),
        `\`network\`: ${describe(item)} is not a host; write \`data.example.org\`, \`*.example.org\` (its subdomains) or \`host:port\``,
      );
  });
  if (hosts.length > 0) meta.networkHosts = [...new Set(hosts)];
}

/** A key whose value is a string with a unit (or a plain number where the unit is implied). */
function unit(
  parse: (value: string | number) => number | undefined,
  expected: string,
  example: string,
  invalid: (text: string) => string,
  store: (m: SamMetadata, v: number) => void,
): KeySpec {
  return {
    expected,
    example,
    apply(meta, value, node, ctx) {
      if (typeof value !== "string" && typeof value !== "number") {
        typeError(ctx, node, value);
        return;
      }
      const parsed = parse(value);
      if (parsed === undefined) ctx.sink.error(ctx.at(node), `\`${ctx.key}\`: ${invalid(String(value))}`);
      else store(meta, parsed);
    },
  };
}

/** A list of relative paths inside the task folder (existence is checked by the parser). */
function pathList(expected: string, example: string, store: (m: SamMetadata, v: string[]) => void): KeySpec {
  return {
    expected,
    example,
    apply(meta, value, node, ctx) {
      const parsed = z.array(relativePath).safeParse(value);
      const items = node.items;
      if (!parsed.success || !items) {
        typeError(ctx, node, value);
        return;
      }
      const offsets = items.map((item) => ctx.at(item));
      const kept: string[] = [];
      const keptOffsets: number[] = [];
      parsed.data.forEach((path, i) => {
        const problem = pathProblem(path);
        if (problem) ctx.sink.error(offsets[i] ?? ctx.at(node), `\`${ctx.key}\`: ${problem}`);
        else {
          kept.push(path);
          keptOffsets.push(offsets[i] ?? ctx.at(node));
        }
      });
      ctx.itemOffsets.set(ctx.key, keptOffsets);
      store(meta, kept);
    },
  };
}

/** Paths in metadata are relative to the SAM's folder and may not leave it. */
export function pathProblem(path: string): string | undefined {
  if (path.startsWith("/")) return `\`${path}\` is absolute; give a path relative to the SAM's folder`;
  if (path.split(/[\\/]/).includes(".."))
    return `\`${path}\` leaves the task folder (\`..\`); keep it inside`;
  if (path.includes("\0")) return `\`${path}\` contains a NUL byte`;
  return undefined;
}

const DURATION_HELP = "durations take a unit s, m, h or d, e.g. `90m`, `2h` or `1h30m`, or are `H:MM:SS`";
const SIZE_HELP = "sizes take a unit K, M, G or T, powers of 1024 (`4G` = 4 GiB), e.g. `4G` or `512Mi`";

function durationMessage(text: string): string {
  if (/^\d+(\.\d+)?$/.test(text.trim()))
    return `\`${text}\` has no unit; write e.g. \`${text}m\`; ${DURATION_HELP}`;
  const suggestion = durationSuggestion(text);
  return suggestion
    ? `invalid duration \`${text}\` (did you mean \`${suggestion}\`?); ${DURATION_HELP}`
    : `invalid duration \`${text}\`; ${DURATION_HELP}`;
}

function sizeMessage(text: string): string {
  return /^\d+(\.\d+)?$/.test(text.trim())
    ? `\`${text}\` has no unit; write e.g. \`${text}M\`; ${SIZE_HELP}`
    : `invalid size \`${text}\`; ${SIZE_HELP}`;
}

const durationOnly = (v: string | number) => (typeof v === "string" ? parseDuration(v) : undefined);
const sizeOnly = (v: string | number) => (typeof v === "string" ? parseSize(v) : undefined);

export const KEYS: Record<string, KeySpec> = {
  name: simple(slug, "a short name (letters, digits, `.`, `_`, `-`)", "name: gaussian-fit", (m, v) => {
    m.name = v;
  }),
  group: simple(slug, "a task-group name (letters, digits, `.`, `_`, `-`)", "group: root-fits", (m, v) => {
    m.group = v;
  }),
  walltime: unit(durationOnly, "a duration", "walltime: 2h", durationMessage, (m, v) => {
    m.walltimeSec = v;
  }),
  iterations: simple(positiveInt, "a positive whole number", "iterations: 10", (m, v) => {
    m.iterations = v;
  }),
  budget_usd: unit(
    parseUsd,
    "an amount in US dollars",
    "budget_usd: 2.50",
    (t) => `invalid amount \`${t}\`; write a number of US dollars, e.g. \`2.50\` or \`$3\``,
    (m, v) => {
      m.budgetUsd = v;
    },
  ),
  network: {
    expected: "`true`, `false` or a list of hosts",
    example: "network: [data.example.org]",
    apply: applyNetwork,
  },
  gpu: simple(z.number().int().nonnegative(), "a GPU count (0 or more)", "gpu: 1", (m, v) => {
    m.gpu = v;
  }),
  cpus: simple(z.number().positive().max(1024), "a positive number of CPUs", "cpus: 4", (m, v) => {
    m.cpus = v;
  }),
  memory: unit(sizeOnly, "a size", "memory: 8G", sizeMessage, (m, v) => {
    m.memoryBytes = v;
  }),
  mounts: { expected: "a list of mounts", example: 'mounts: ["/data/run1:/data:ro"]', apply: applyMounts },
  scratch: unit(sizeOnly, "a size", "scratch: 20G", sizeMessage, (m, v) => {
    m.scratchBytes = v;
  }),
  jobs: simple(z.literal("slurm"), "`slurm` (the only job system supported)", "jobs: slurm", (m, v) => {
    m.jobs = v;
  }),
  skills: simple(nameList, "a list of skill names", "skills: [root, slurm]", (m, v) => {
    m.skills = v;
  }),
  image: simple(
    z.string().min(1).max(256),
    "a container image name",
    "image: scifi-sandbox:latest",
    (m, v) => {
      m.image = v;
    },
  ),
  difficulty: simple(
    z.enum(["easy", "medium", "hard"]),
    "`easy`, `medium` or `hard`",
    "difficulty: medium",
    (m, v) => {
      m.difficulty = v;
    },
  ),
  unpassable: {
    expected: "a note of why no solution can pass the task here",
    example: 'unpassable: "the tests download data over the network"',
    apply(meta, value, node, ctx) {
      if (typeof value !== "string" || value.trim() === "" || value.length > 2000) {
        typeError(ctx, node, value);
        return;
      }
      meta.unpassable = value;
      // Said on every validate: a task marked so scores 0 for every model, whatever they do.
      ctx.sink.warning(ctx.at(node), `this task is marked unpassable: ${value}`);
    },
  },
  rank: simple(
    z.strictObject({ work: positiveInt.optional(), control: positiveInt.optional() }),
    "a mapping with `work` and/or `control` ranks (whole numbers from 1)",
    "rank: {work: 2, control: 3}",
    (m, v) => {
      m.rank = sortedRank(v);
    },
  ),
  approval: {
    expected: `a list of actions needing human approval (${APPROVAL_ACTIONS.join(", ")})`,
    example: "approval: [submit_job, finish]",
    apply(meta, value, node, ctx) {
      const parsed = nameList.safeParse(value);
      if (!parsed.success) return typeError(ctx, node, value);
      const items = node.items ?? [];
      const kept: ApprovalAction[] = [];
      parsed.data.forEach((name, i) => {
        const unenforced = isApprovalAction(name) ? notEnforcedMessage(name) : undefined;
        if (isApprovalAction(name) && !unenforced) {
          if (!kept.includes(name)) kept.push(name);
        } else if (unenforced) {
          ctx.sink.error(ctx.at(items[i] ?? node), `\`approval\`: ${unenforced}`);
        } else {
          ctx.sink.error(ctx.at(items[i] ?? node), `\`approval\`: ${unknownActionMessage(name)}`);
        }
      });
      meta.approval = kept;
    },
  },
  approval_timeout: unit(durationOnly, "a duration", "approval_timeout: 12h", durationMessage, (m, v) => {
    m.approvalTimeoutSec = v;
  }),
  check_assets: pathList(
    "a list of file paths relative to the SAM",
    "check_assets: [ref/expected.csv]",
    (m, v) => {
      m.checkAssets = v;
    },
  ),
  hidden_assets: pathList(
    "a list of check asset paths relative to the SAM, kept from the agents",
    "hidden_assets: [checks/reference.sv]",
    (m, v) => {
      m.hiddenAssets = v;
    },
  ),
  subtasks: pathList(
    "a list of sub-SAM files relative to the SAM",
    "subtasks: [prepare.md, analyse.md]",
    (m, v) => {
      m.subtasks = v;
    },
  ),
  allow_commands: simple(
    // A name is looked up on the sandbox's fixed PATH; an entry with a slash (./stats) is a path
    // that runs only when written exactly so (runner/tools/allowlist.ts).
    z.array(z.string().regex(/^[A-Za-z0-9._+/-]+$/)),
    "a list of program names or exact paths (./stats)",
    "allow_commands: [make, gfortran]",
    (m, v) => {
      m.allowCommands = v;
    },
  ),
  critique: simple(
    z.enum(["off", "report", "approve", "block"]),
    "`off`, `report`, `approve` or `block` (docs/critique.md)",
    "critique: block",
    (m, v) => {
      m.critique = v;
    },
  ),
  keep_jobs: simple(z.boolean(), "`true` or `false`", "keep_jobs: false", (m, v) => {
    m.keepJobs = v;
  }),
};

/** Keys a referenced sub-SAM file may set; resources are requested by the top-level SAM only. */
export const SUB_SAM_KEYS = ["name", "subtasks"] as const;

function sortedRank(rank: { work?: number; control?: number }): { work?: number; control?: number } {
  const out: { work?: number; control?: number } = {};
  if (rank.work !== undefined) out.work = rank.work;
  if (rank.control !== undefined) out.control = rank.control;
  return out;
}

export function defaultMetadata(name: string): SamMetadata {
  return { name, network: false, gpu: 0, mounts: [], skills: [], checkAssets: [], subtasks: [] };
}

export interface MetadataResult {
  metadata: SamMetadata;
  /** Offsets of `subtasks` and `check_assets` items, for errors found when resolving them. */
  itemOffsets: Map<string, number[]>;
}

export interface MetadataOptions {
  /** The front matter's top level (yaml-fast.ts), or undefined when there is none or it is malformed. */
  doc: MetaDoc | undefined;
  yamlStart: number;
  sink: DiagnosticSink;
  defaultName: string;
  /** When set, only these keys are allowed (referenced sub-SAM files). */
  allowedKeys?: readonly string[];
  /** Shown in the "not allowed here" message for sub-SAM files. */
  rootFile?: string;
}

export function readMetadata(options: MetadataOptions): MetadataResult {
  const { doc, yamlStart, sink } = options;
  const metadata = defaultMetadata(options.defaultName);
  const itemOffsets = new Map<string, number[]>();
  if (!doc) return { metadata, itemOffsets };
  const at = (node: MetaNode | null | undefined) => yamlStart + (node?.start ?? 0);
  if (doc.kind !== "map") {
    sink.error(
      yamlStart + doc.start,
      "front matter must be `key: value` lines (a YAML mapping), e.g. `walltime: 2h`",
    );
    return { metadata, itemOffsets };
  }
  for (const pair of doc.pairs) {
    const keyAt = yamlStart + pair.keyStart;
    const key = pair.key;
    if (key === undefined) {
      sink.error(keyAt, "metadata keys must be plain words, e.g. `walltime`");
      continue;
    }
    const spec = KEYS[key];
    if (!spec) {
      sink.error(keyAt, unknownKeyMessage(key, options.allowedKeys ?? Object.keys(KEYS)));
      continue;
    }
    if (options.allowedKeys && !options.allowedKeys.includes(key)) {
      sink.error(
        keyAt,
        `\`${key}\` is not allowed in a referenced sub-SAM file; only ${options.allowedKeys.map((k) => `\`${k}\``).join(" and ")} are (resources are requested by the top-level SAM${options.rootFile ? ` ${options.rootFile}` : ""})`,
      );
      continue;
    }
    const valueNode = pair.value;
    const value = valueNode ? valueNode.value() : null;
    spec.apply(metadata, value, valueNode ?? { start: pair.keyStart, value: () => null }, {
      key,
      sink,
      at,
      spec,
      itemOffsets,
    });
  }
  return { metadata, itemOffsets };
}

/** Names people reach for, mapped to the key scifi uses. */
const KEY_ALIASES: Readonly<Record<string, string>> = {
  wallclock: "walltime",
  time: "walltime",
  time_limit: "walltime",
  timeout: "walltime",
  budget: "budget_usd",
  cost: "budget_usd",
  gpus: "gpu",
  cpu: "cpus",
  mem: "memory",
  max_iterations: "iterations",
  assets: "check_assets",
  subsams: "subtasks",
  sub_sams: "subtasks",
};

function unknownKeyMessage(key: string, known: readonly string[]): string {
  const alias = KEY_ALIASES[key.toLowerCase().replace(/-/g, "_")];
  const suggestion = alias && known.includes(alias) ? alias : closest(key, known);
  return suggestion
    ? `unknown metadata key \`${key}\`; did you mean \`${suggestion}\`?`
    : `unknown metadata key \`${key}\`; known keys: ${known.join(", ")}`;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return "nothing (an empty value)";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return `the text \`${value}\``;
  return `\`${String(value)}\``;
}

// ---- mounts ----

const MODES = new Set(["ro", "rw"]);
const MOUNT_KEYS = ["host", "container", "mode"];
const MOUNT_FORMS =
  "write `host:container[:ro|rw]` or `{host: ..., container: ..., mode: ro}`, e.g. `/data/run1:/data:ro`";

function applyMounts(meta: SamMetadata, value: unknown, node: MetaNode, ctx: KeyContext): void {
  const items = node.items;
  if (!Array.isArray(value) || !items) {
    typeError(ctx, node, value);
    return;
  }
  const seen = new Map<string, number>();
  value.forEach((entry, i) => {
    const itemNode = items[i];
    const offset = ctx.at(itemNode ?? node);
    const mount = parseMount(entry);
    if (!mount.ok) {
      ctx.sink.error(offset, `bad mount entry: ${mount.message}`);
      return;
    }
    const { line } = ctx.sink.position(offset);
    const first = seen.get(mount.value.container);
    if (first !== undefined) {
      ctx.sink.error(
        offset,
        `bad mount entry: container path \`${mount.value.container}\` is already mounted (line ${first}); mount each container path once`,
      );
      return;
    }
    seen.set(mount.value.container, line);
    meta.mounts.push({ ...mount.value, line });
  });
}

function parseMount(entry: unknown): Outcome<Omit<MountRequest, "line">> {
  if (typeof entry === "string") return parseShortMount(entry);
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
    return { ok: false, message: `expected a string or a mapping, got ${describe(entry)}; ${MOUNT_FORMS}` };
  }
  const record = entry as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!MOUNT_KEYS.includes(key)) {
      const suggestion = closest(key, MOUNT_KEYS);
      return {
        ok: false,
        message: `unknown key \`${key}\`${suggestion ? `; did you mean \`${suggestion}\`?` : ""} (keys: host, container, mode)`,
      };
    }
  }
  for (const key of ["host", "container"]) {
    if (typeof record[key] !== "string" || record[key] === "") {
      return { ok: false, message: `\`${key}\` must be a non-empty path; ${MOUNT_FORMS}` };
    }
  }
  const mode = record.mode ?? "ro";
  return checkMount(String(record.host), String(record.container), mode);
}

function parseShortMount(text: string): Outcome<Omit<MountRequest, "line">> {
  const parts = text.split(":");
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => p === "")) {
    return { ok: false, message: `\`${text}\` is not \`host:container[:ro|rw]\`; ${MOUNT_FORMS}` };
  }
  return checkMount(parts[0] ?? "", parts[1] ?? "", parts[2] ?? "ro");
}

function checkMount(host: string, container: string, mode: unknown): Outcome<Omit<MountRequest, "line">> {
  if (typeof mode !== "string" || !MODES.has(mode)) {
    return { ok: false, message: `mode \`${String(mode)}\` is not \`ro\` or \`rw\`` };
  }
  if (!container.startsWith("/")) {
    return { ok: false, message: `container path \`${container}\` must be absolute, e.g. \`/data\`` };
  }
  if (container.split("/").includes("..") || host.split("/").includes("..")) {
    return { ok: false, message: "paths may not contain `..`; write the path without it" };
  }
  return { ok: true, value: { host, container, mode: mode as "ro" | "rw" } };
}
