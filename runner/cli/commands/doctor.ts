// `scifi doctor [--json]`: which sandbox backends answer, engine versions, which images are present
// (and that the local one lacks ROOT), the site policy in force, and for each problem the one command
// that fixes it. Exit 0 when everything a default run needs is there, 1 otherwise.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { scifiHome } from "../../paths.ts";

export function register(program: Command): void {
  program
    .command("doctor")
    .description(
      "Check sandbox backends, engines, images and the site policy; print the fix for each problem",
    )
    .option("--json", "print the checks as JSON")
    .action(async (options: { json?: boolean }) => {
      const items = await runDoctor();
      process.stdout.write(options.json ? `${JSON.stringify(items, null, 2)}\n` : formatDoctor(items));
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
  items.push(await sitePolicyItem(env));
  return items;
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
