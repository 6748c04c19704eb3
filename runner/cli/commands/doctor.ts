// `scifi doctor [--json]`: which sandbox backends answer, engine versions, which images are present
// (and that the local one lacks ROOT), the site policy in force, and for each problem the one command
// that fixes it; the image's tools and versions, this host's GPUs, the home's models.yaml and SLURM.
// Exit 0 when everything a default run needs is there, 1 otherwise.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { loadModelsConfig, resolveApiKey } from "../../llm/config.ts";
import { scifiHome } from "../../paths.ts";
import { visibleJson } from "../../terminal-text.ts";

export function register(program: Command): void {
  program
    .command("doctor")
    .description(
      "Check sandbox backends, engines, images and the site policy; print the fix for each problem",
    )
    .option("--json", "print the checks as JSON")
    .action(async (options: { json?: boolean }) => {
      const items = await runDoctor();
      process.stdout.write(options.json ? `${visibleJson(items, 2)}\n` : formatDoctor(items));
      process.exitCode = items.every((i) => i.ok || i.optional) ? EXIT.ok : EXIT.failed;
    });
}

const run = promisify(execFile);
const REPO = join(import.meta.dirname, "..", "..", "..");

export interface DoctorItem {
  name: string;
  ok: boolean;
  detail: string;
  /** The one command that fixes it, when not ok. */
  fix?: string;
  /** Not ok, but nothing scifi needs by default depends on it. */
  optional?: boolean;
}

/** The images scifi uses, and whether a missing one matters. */
const IMAGES = [
  { image: "scifi-sci:local", optional: false, fix: "bash scripts/build-image.sh" },
  { image: "scifi-base:bookworm", optional: true, fix: "bash scripts/build-image.sh --base-only" },
];

export async function runDoctor(env: NodeJS.ProcessEnv = process.env): Promise<DoctorItem[]> {
  const { backendNames } = await import("../../sandbox/registry.ts");
  const items: DoctorItem[] = [];
  for (const name of backendNames()) items.push(await backendItem(name));
  const dockerUp = items.some((i) => i.name === "backend docker" && i.ok);
  for (const image of IMAGES) items.push(await imageItem(image, dockerUp));
  const sci = items.find((i) => i.name === "image scifi-sci:local");
  if (sci?.detail.startsWith("present")) items.push(await imageToolsItem("scifi-sci:local"));
  items.push(await sitePolicyItem(env));
  items.push(await gpuItem(env));
  items.push(modelsItem(env));
  items.push(await slurmItem());
  return items;
}

/** The image's tools and versions, asked of the image itself (one short container). */
const PY_PROBE = `import importlib, importlib.util as u, sys; print("python3", sys.version.split()[0]); [print(m, importlib.import_module(m).__version__ if u.find_spec(m) else "missing") for m in ["numpy", "scipy", "pandas", "matplotlib", "h5py", "sklearn", "seaborn"]]`;
const TOOL_PROBE = [
  'printf "gfortran %s\\n" "$(gfortran -dumpfullversion 2>/dev/null || echo missing)"',
  'printf "verilator %s\\n" "$(verilator --version 2>/dev/null | cut -d" " -f2)"',
  'printf "iverilog %s\\n" "$(iverilog -V 2>/dev/null | head -n1 | cut -d" " -f4)"',
  'printf "make %s\\n" "$(make --version 2>/dev/null | head -n1 | cut -d" " -f3)"',
  'python3 -c "$PY_PROBE"',
].join("; ");

async function imageToolsItem(image: string): Promise<DoctorItem> {
  const name = "image tools";
  try {
    const { stdout } = await run(
      "docker",
      [
        "run",
        "--rm",
        "--network=none",
        "--user=65534:65534",
        "-e",
        `PY_PROBE=${PY_PROBE}`,
        image,
        "sh",
        "-c",
        TOOL_PROBE,
      ],
      { timeout: 60_000 },
    );
    const tools = stdout
      .trim()
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .map((t) => (t.includes(" ") ? t : `${t} missing`));
    const missing = tools.filter((t) => t.endsWith(" missing")).map((t) => t.split(" ")[0]);
    return {
      name,
      ok: missing.length === 0,
      detail: tools.join(", "),
      ...(missing.length ? { fix: "bash scripts/build-image.sh", optional: true } : {}),
    };
  } catch (error) {
    return {
      name,
      ok: false,
      optional: true,
      detail: `could not ask the image: ${(error as Error).message.split("\n")[0]}`,
    };
  }
}

/** This host's GPUs against what the site allows: a `gpu:` task is refused here when there are none. */
async function gpuItem(env: NodeJS.ProcessEnv): Promise<DoctorItem> {
  const { hostGpuCount } = await import("../../policy/host-gpus.ts");
  const { loadSitePolicy, sitePolicyPath } = await import("../../policy/site.ts");
  const gpus = hostGpuCount();
  let allowed = 0;
  try {
    allowed = loadSitePolicy(sitePolicyPath(scifiHome(env), undefined, env), false).policy.maxGpus;
  } catch {
    // The site policy item reports the file's problem.
  }
  if (gpus === 0) {
    return {
      name: "gpus",
      ok: true,
      detail: `none on this host (no NVIDIA device in /dev): a SAM with \`gpu:\` is refused by plan and run here${allowed > 0 ? ` although the site allows ${allowed}` : ""}; scifi submit places it on a SLURM GPU node`,
    };
  }
  return {
    name: "gpus",
    ok: true,
    detail: `${gpus} on this host; the site policy allows ${allowed} per task`,
  };
}

/** The home's models.yaml: present and valid (entries and whether their API keys are set). */
function modelsItem(env: NodeJS.ProcessEnv): DoctorItem {
  const path = join(scifiHome(env), "models.yaml");
  const name = "models.yaml";
  if (!existsSync(path)) {
    return {
      name,
      ok: false,
      optional: true,
      detail: `no ${path}: real runs need it (scripted runs do not)`,
      fix: `cp models.example.yaml ${path}`,
    };
  }
  try {
    const config = loadModelsConfig(path);
    const keys = config.models.map((entry) => {
      try {
        resolveApiKey(entry, env);
        return `${entry.name} (key set)`;
      } catch {
        return `${entry.name} (NO API KEY)`;
      }
    });
    const missing = keys.filter((k) => k.endsWith("(NO API KEY)"));
    return {
      name,
      ok: missing.length === 0,
      detail: `${path}: ${keys.join(", ")}`,
      ...(missing.length
        ? { fix: "set the API key environment variables named in models.yaml (apiKeyEnv)" }
        : {}),
    };
  } catch (error) {
    return { name, ok: false, detail: (error as Error).message, fix: `edit ${path} (see docs/models.md)` };
  }
}

/** SLURM's client commands and a controller that answers (needed by `jobs: slurm` and `scifi submit`). */
async function slurmItem(): Promise<DoctorItem> {
  const name = "slurm";
  try {
    const { stdout: version } = await run("sbatch", ["--version"], { timeout: 10_000 });
    try {
      const { stdout } = await run("sinfo", ["-h", "-o", "%P %a %D"], { timeout: 10_000 });
      const partitions = stdout.trim().split("\n").filter(Boolean).join("; ");
      return { name, ok: true, detail: `${version.trim()}; partitions: ${partitions || "none"}` };
    } catch (error) {
      return {
        name,
        ok: false,
        optional: true,
        detail: `${version.trim()}, but the controller does not answer: ${(error as Error).message.split("\n")[0]}`,
        fix: "start slurmctld (or check SLURM_CONF)",
      };
    }
  } catch {
    return {
      name,
      ok: false,
      optional: true,
      detail: "no sbatch on PATH: `jobs: slurm` tasks and scifi submit need SLURM's client commands",
    };
  }
}

async function backendItem(name: string): Promise<DoctorItem> {
  try {
    const { getBackend } = await import("../../sandbox/registry.ts");
    const status = await (await getBackend(name)).status();
    return {
      name: `backend ${name}`,
      ok: status.available,
      detail: status.detail.split("\n")[0] ?? status.detail,
      ...(status.fix ? { fix: status.fix } : {}),
      optional: name !== "docker",
    };
  } catch (error) {
    // SandboxUnavailable carries its own fix; its message repeats it, so show the first line only.
    const message = error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error);
    const fix =
      typeof error === "object" && error !== null && "fix" in error && typeof error.fix === "string"
        ? error.fix
        : undefined;
    return {
      name: `backend ${name}`,
      ok: false,
      detail: message,
      ...(fix ? { fix } : {}),
      optional: name !== "docker",
    };
  }
}

async function imageItem(
  wanted: { image: string; optional: boolean; fix: string },
  dockerUp: boolean,
): Promise<DoctorItem> {
  const name = `image ${wanted.image}`;
  if (!dockerUp)
    return {
      name,
      ok: false,
      detail: "unknown: no Docker engine",
      fix: "bash scripts/start-docker.sh",
      optional: wanted.optional,
    };
  const Docker = (await import("dockerode")).default;
  let labels: Record<string, string>;
  try {
    const info = await new Docker().getImage(wanted.image).inspect();
    labels = info.Config.Labels ?? {};
  } catch {
    return { name, ok: false, detail: "not present", fix: wanted.fix, optional: wanted.optional };
  }
  const root = labels["scifi.root"];
  const notes = [
    root === "absent"
      ? "present; ROOT absent (Debian does not package it; the production image images/Dockerfile has it)"
      : root === "present"
        ? "present; ROOT present"
        : "present",
  ];
  const stale = await isStale(wanted.image);
  if (stale)
    return {
      name,
      ok: false,
      detail: `${notes[0]}; out of date with images/ (${stale})`,
      fix: wanted.fix,
      optional: wanted.optional,
    };
  return { name, ok: true, detail: notes[0] ?? "present" };
}

/** Asks the build script whether the image matches images/ and the script; undefined when it does. */
async function isStale(image: string): Promise<string | undefined> {
  const script = join(REPO, "scripts", "build-image.sh");
  if (!existsSync(script)) return undefined;
  try {
    await run("bash", [script, "--check", image], { timeout: 30_000 });
    return undefined;
  } catch (error) {
    const stdout =
      typeof error === "object" && error !== null && "stdout" in error ? String(error.stdout).trim() : "";
    return stdout.split("\n").at(-1) || "the build script reports it stale";
  }
}

async function sitePolicyItem(env: NodeJS.ProcessEnv): Promise<DoctorItem> {
  const { loadSitePolicy, sitePolicyPath } = await import("../../policy/site.ts");
  const name = "site policy";
  const path = sitePolicyPath(scifiHome(env), undefined, env);
  if (!existsSync(path)) {
    return env.SCIFI_SITE_POLICY
      ? {
          name,
          ok: false,
          detail: `SCIFI_SITE_POLICY names ${path}, which does not exist`,
          fix: `cp site-policy.example.yaml ${path}`,
        }
      : { name, ok: true, detail: `built-in defaults (no ${path}; see site-policy.example.yaml)` };
  }
  try {
    const { policy } = loadSitePolicy(path, true);
    const roots = policy.allowedMountRoots.length > 0 ? policy.allowedMountRoots.join(", ") : "none";
    return {
      name,
      ok: true,
      detail: `${path} (mount roots: ${roots}; network ${policy.allowNetwork ? "allowed" : "denied"})`,
    };
  } catch (error) {
    return {
      name,
      ok: false,
      detail: error instanceof Error ? error.message : String(error),
      fix: `edit ${path}`,
    };
  }
}

/** Human report: one line per item, and the fixes at the end. */
export function formatDoctor(items: DoctorItem[]): string {
  const lines = items.map(
    (i) => `${i.ok ? "ok  " : i.optional ? "--  " : "FAIL"}  ${i.name.padEnd(28)} ${i.detail}`,
  );
  const fixes = items.filter((i) => !i.ok && i.fix);
  if (fixes.length > 0) {
    lines.push("", "to fix:");
    for (const i of fixes) lines.push(`  ${i.name}: ${i.fix}`);
  }
  return `${lines.join("\n")}\n`;
}
