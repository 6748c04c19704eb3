// `scifi import harbor`: a Harbor task folder (task.toml, instruction.md, environment/Dockerfile,
// tests/test.sh, solution/solve.sh), or an older Terminal-Bench one (task.yaml, Dockerfile,
// run-tests.sh, tests/, solution.sh), as a SAM folder.
//
// The mapping keeps scifi's trust model (docs/loop.md, "Checks in stages"): Harbor runs its tests in
// the container the agent worked in; here they become hidden assets run by a **compare stage**,
// which sees the runner's copies of the tests and the agent's files only as declared outputs (the
// files the tests read under the working folder, `/app/...`), never the agent's task folder. A run
// stage before it declares those outputs. Harbor's fixed paths are rewritten in the copies of the
// tests: /tests -> the hidden tests, /logs/verifier -> a scratch folder, /app -> the outputs. The
// reward (reward.txt, or every metric of reward.json) must reach the pass threshold (default 1).
// Commands of the tests that fetch software are mapped to the image's tools or make the task
// unpassable here (fetch-map.ts): refused unless `allowUnpassable`, then recorded in the SAM.
// What cannot be mapped (base image, GPU types, build steps, users, environment variables,
// Harbor's default of open internet, compose files, files nothing copies) is listed, printed and
// written to harbor-import.md.
import { lstatSync, readdirSync, writeFileSync } from "node:fs";
import { basename, join, relative } from "node:path";
import { scifiHome } from "../paths.ts";
import { loadSitePolicy, sitePolicyPath } from "../policy/site.ts";
import { parseSamString } from "../sam/parse.ts";
import { type DockerfileFacts, readDockerfile } from "./dockerfile.ts";
import { mapFetches } from "./fetch-map.ts";
import { linkOnTheWay, listTree, readBytes, readText, write } from "./files.ts";
import { type HarborConfig, HarborImportError } from "./harbor-config.ts";
import { CHECKS, demoteHeadings, quoteVerbatim, rewardRule, verifier } from "./harbor-text.ts";
import { dockerProbe, type ImageProbe } from "./image-tools.ts";
import { stagedImport } from "./output-gate.ts";
import { leftOver, readTaskSource, type TaskSource } from "./task-source.ts";

export { HarborImportError } from "./harbor-config.ts";

export interface HarborImportOptions {
  /** Extra files of the agent's the tests read (relative to Harbor's working folder). */
  outputs?: string[];
  /** Reward a metric must reach to pass (default 1). */
  passThreshold?: number;
  /** The scifi home whose skills library the gate checks skill names against (default: SCIFI_HOME). */
  home?: string;
  /** The image the checks will run in: written as `image:`; absent, the site's default image. */
  image?: string;
  /** Import a task whose tests cannot work here anyway, recorded as `unpassable:` in the SAM. */
  allowUnpassable?: boolean;
  /** Asks the image what it holds (default: docker run). */
  probe?: ImageProbe;
}

export interface HarborImport {
  outDir: string;
  sam: string;
  layout: "harbor" | "terminal-bench";
  /** What was mapped, each as `Harbor thing -> SAM thing`. */
  mapped: string[];
  /** What was not mapped, and why. */
  unmapped: string[];
  /** Lines of the tests no mapping exists for (`file:line: why`); non-empty only with allowUnpassable. */
  unpassable: string[];
  /** The agent's files the hidden tests read (the run stage's declared outputs). */
  outputs: string[];
  /** The image the fetches were mapped against. */
  image: string;
  /** The reference solution (not copied): its folder and the script Harbor runs in the working folder. */
  solution?: { dir: string; script: string };
}

/** The task's tests cannot pass here: each line and why, and what to do. */
export class UnpassableImport extends HarborImportError {
  override name = "UnpassableImport";
  readonly lines: string[];
  constructor(lines: string[], image: string) {
    super(
      `the task cannot pass here: its tests fetch or install software, checks run without network, and ${image} offers no replacement for:\n${lines.map((l) => `  ${l}`).join("\n")}\nUse an image that holds what they install (--image), edit the tests, or import anyway with --allow-unpassable (recorded in the SAM as \`unpassable:\`)`,
    );
    this.lines = lines;
  }
}

/** Extensions of code: a compare stage reads outputs as data, never runs them. */
const CODE = /\.(py|sh|bash|c|cc|cpp|h|hpp|f|f90|v|sv|js|ts|rb|pl|r|jl|go|rs|java|mod|so)$/i;

export function importHarbor(
  taskDir: string,
  outDir: string,
  options: HarborImportOptions = {},
): HarborImport {
  const source = readTaskSource(taskDir);
  const config = source.config;
  if (config.steps > 0)
    throw new HarborImportError(
      `${join(taskDir, source.configName)}: a multi-step task ([[steps]], ${config.steps}) cannot be imported: write one SAM per step with sub-SAMs by hand`,
    );
  const instruction = source.instruction.trim();
  if (instruction === "")
    throw new HarborImportError(`${source.instructionFile} holds no instruction: it is the task's To-do`);
  const docker: DockerfileFacts = readDockerfile(source.dockerfile ? readText(source.dockerfile) : "");
  const out = lstatSync(outDir, { throwIfNoEntry: false });
  if (out && (!out.isDirectory() || readdirSync(outDir).length > 0))
    throw new HarborImportError(`${outDir} exists and is not an empty folder; choose another output (-o)`);

  const mapped: string[] = [...source.mapped];
  const unmapped: string[] = [];
  const threshold = options.passThreshold ?? 1;
  const workdir = docker.workdir;
  const image =
    options.image ?? loadSitePolicy(sitePolicyPath(options.home ?? scifiHome()), false).policy.defaultImage;

  // The hidden tests: fetches mapped to the image or refused, Harbor's fixed paths rewritten, the
  // outputs they read collected.
  const fetches = mapFetches(source.tests, image, options.probe ?? dockerProbe);
  if (fetches.unpassable.length > 0 && !options.allowUnpassable)
    throw new UnpassableImport(fetches.unpassable, image);
  const found = new Set<string>();
  const rewritten = new Map<string, string>();
  for (const test of source.tests) {
    const text = fetches.texts.get(test.rel) ?? test.text;
    for (const path of pathsUnder(text, workdir)) found.add(path);
    const run = runsAgentFile(text, workdir);
    if (run)
      throw new HarborImportError(
        `${test.origin} runs ${run}, the agent's file, as a program: a scifi compare stage reads the agent's files as data only (docs/loop.md, "Checks in stages"); split the test into a run stage that executes it and a compare stage by hand`,
      );
    rewritten.set(test.rel, rewritePaths(text, workdir));
  }
  mapped.push(...fetches.mapped);
  unmapped.push(...fetches.notes);
  for (const o of options.outputs ?? []) found.add(o.replace(/^\.\//, ""));
  const outputs = [...found].sort();
  if (outputs.length === 0)
    throw new HarborImportError(
      `the tests name no file under ${workdir} (Harbor's working folder): say which of the agent's files they read with --outputs FILE,...`,
    );
  for (const o of outputs) {
    if (!/^[A-Za-z0-9._-][A-Za-z0-9._/-]*$/.test(o) || o.split("/").includes(".."))
      throw new HarborImportError(
        `output ${JSON.stringify(o)} is not a plain relative path (letters, digits, . _ - /)`,
      );
    if (CODE.test(o))
      throw new HarborImportError(
        `the tests run or read ${workdir}/${o}, the agent's code: a scifi compare stage reads the agent's files as data only (docs/loop.md, "Checks in stages"); split the test into a run stage that executes it and a compare stage by hand`,
      );
  }

  // The SAM folder: starting files from the Dockerfile's COPY lines, the hidden checks, task.md.
  // Written into a staging folder beside the output, put through the one SAM gate there and moved
  // into place only when it passes: a refused import leaves nothing behind (output-gate.ts).
  return stagedImport(outDir, options.home, (dir) => {
    const copied = copyStartingFiles(source, docker, dir, mapped, unmapped);
    for (const [rel, text] of rewritten) write(dir, join(CHECKS, "tests", rel), text);
    write(dir, join(CHECKS, "verify.sh"), verifier(threshold));
    const assets = [
      ...[...rewritten.keys()].map((rel) => join(CHECKS, "tests", rel)),
      join(CHECKS, "verify.sh"),
    ].sort();
    mapped.push(
      `tests/ -> ${CHECKS}/tests/ (hidden assets; /tests, /logs/verifier and ${workdir} rewritten)`,
    );
    mapped.push(`tests/test.sh's reward -> a compare stage that passes when ${rewardRule(threshold)}`);
    mapped.push(
      `${workdir} (Harbor's working folder) -> the task folder; the tests read ${outputs.join(", ")} as declared outputs`,
    );

    const meta = metadata(config, taskDir, mapped, unmapped, source.configName);
    if (options.image) {
      meta.push(`image: ${JSON.stringify(options.image)}`);
      mapped.push(`--image ${options.image} -> image: (the image the tests' tools were looked up in)`);
    }
    const unpassable = fetches.unpassable;
    if (unpassable.length > 0) {
      // The SAM is visible to the agent: lines are named, hidden tests never quoted.
      const where = unpassable.map((u) => u.split(": ")[0]).join(", ");
      meta.push(
        `unpassable: ${JSON.stringify(`imported with --allow-unpassable: no solution can pass here; the tests fetch software over the network at ${where} (harbor-import.md)`)}`,
      );
    }
    for (const d of docker.unmapped)
      unmapped.push(
        `Dockerfile line ${d.line}: \`${d.text.slice(0, 100)}\`: the sandbox uses the site's image (set \`image:\` to one that has what this builds)`,
      );
    unmapped.push(...leftOver(source, copied));

    const sam = join(dir, "task.md");
    const text = (todo: string) => samText(meta, config, todo, outputs, assets, workdir, threshold);
    let samSource = text(demoteHeadings(instruction));
    const structure = samErrors(samSource, sam);
    if (structure.length > 0) {
      // The instruction holds Markdown a SAM reads as its own (a section heading, a check block, an
      // unclosed fence): quoted whole in a fence, it stays verbatim and the To-do stays one section.
      samSource = text(quoteVerbatim(instruction));
      mapped.push(
        `${basename(source.instructionFile)} -> the To-do, quoted verbatim in a fence: as Markdown it would have been read as SAM structure (${structure[0]})`,
      );
      const still = samErrors(samSource, sam);
      if (still.length > 0)
        throw new HarborImportError(
          `${source.instructionFile}: the imported SAM would not validate: ${still.join("; ")}`,
        );
    }
    writeFileSync(sam, samSource);
    const result: HarborImport = {
      outDir,
      sam: join(outDir, "task.md"),
      layout: source.layout,
      mapped,
      unmapped,
      unpassable,
      outputs,
      image,
      ...(source.solution ? { solution: source.solution } : {}),
    };
    writeFileSync(join(dir, "harbor-import.md"), notesText(taskDir, result));
    return result;
  });
}

/** The Dockerfile's COPY lines into the working folder, as the task folder's starting files. */
function copyStartingFiles(
  source: TaskSource,
  docker: DockerfileFacts,
  dir: string,
  mapped: string[],
  unmapped: string[],
): Set<string> {
  const copied = new Set<string>();
  for (const copy of docker.copies) {
    const from = join(source.context, copy.from);
    if (linkOnTheWay(source.dir, from))
      throw new HarborImportError(
        `Dockerfile line ${copy.line}: COPY ${copy.from} passes through a symbolic link or leaves ${source.layout === "harbor" ? "environment/" : "the task folder"}; the import copies files of the task only (replace the link by the folder it names)`,
      );
    const top = relative(source.dir, from).split("/")[0] ?? "";
    if (source.hidden.has(top) || source.hidden.has(relative(source.dir, from)))
      throw new HarborImportError(
        `Dockerfile line ${copy.line}: COPY ${copy.from} would hand the agent the task's tests or solution; remove that line (the import hides them from the agent)`,
      );
    const s = lstatSync(from, { throwIfNoEntry: false });
    if (!s || s.isSymbolicLink() || !(s.isFile() || s.isDirectory())) {
      unmapped.push(
        `Dockerfile line ${copy.line}: COPY ${copy.from}: not a file or folder in ${source.layout === "harbor" ? "environment/" : "the task folder"}`,
      );
      continue;
    }
    const targets = s.isFile()
      ? [{ src: from, dst: copy.into ? join(copy.to, basename(copy.from)) : copy.to }]
      : listTree(from).map((rel) => ({ src: join(from, rel), dst: join(copy.to, rel) }));
    for (const { src, dst } of targets) {
      if (dst === "task.md" || dst === "harbor-import.md" || dst.startsWith("checks/"))
        throw new HarborImportError(
          `Dockerfile line ${copy.line} copies into ${dst}, which the SAM folder uses itself`,
        );
      write(dir, dst, readBytes(src));
      copied.add(relative(source.dir, src));
    }
    mapped.push(`Dockerfile line ${copy.line} COPY ${copy.from} -> ${copy.to || "."} in the task folder`);
  }
  return copied;
}

function metadata(
  config: HarborConfig,
  taskDir: string,
  mapped: string[],
  unmapped: string[],
  configName: string,
): string[] {
  const lines: string[] = [];
  const raw = (config.name ?? basename(taskDir)).split("/").at(-1) ?? "task";
  const name = raw.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[^A-Za-z0-9]+/, "") || "harbor-task";
  lines.push(`name: ${name}`);
  mapped.push(`task name ${JSON.stringify(raw)} -> name: ${name}`);
  const agent = config.agentTimeoutSec ?? 600;
  const verifierSec = config.verifierTimeoutSec ?? 600;
  const wall = Math.ceil(agent) + Math.ceil(verifierSec);
  lines.push(`walltime: ${wall}s`);
  mapped.push(
    `agent.timeout_sec ${agent} + verifier.timeout_sec ${verifierSec} -> walltime: ${wall}s (scifi counts checks in the run's wall time)`,
  );
  if (config.cpus !== undefined) {
    lines.push(`cpus: ${config.cpus}`);
    mapped.push(`environment.cpus -> cpus: ${config.cpus}`);
  }
  if (config.memoryMb !== undefined) {
    const mb = Math.ceil(config.memoryMb);
    lines.push(`memory: ${mb}M`);
    mapped.push(`environment memory -> memory: ${mb}M`);
  }
  if (config.gpus !== undefined && config.gpus > 0) {
    lines.push(`gpu: ${config.gpus}`);
    mapped.push(`environment.gpus -> gpu: ${config.gpus}`);
  }
  if (config.allowInternet === true) {
    lines.push("network: true");
    mapped.push("environment.allow_internet = true -> network: true (the site policy still decides)");
  } else if (config.allowInternet === undefined) {
    unmapped.push(
      configName === "task.yaml"
        ? "task.yaml says nothing of the network: Terminal-Bench allows the internet, scifi denies it; add `network: true` if the task needs it"
        : "environment.allow_internet is not set: Harbor allows the internet by default, scifi denies it; add `network: true` if the task needs it",
    );
  } else mapped.push("environment.allow_internet = false -> no network (scifi's default)");
  if (config.difficulty !== undefined) {
    if (["easy", "medium", "hard"].includes(config.difficulty)) {
      lines.push(`difficulty: ${config.difficulty}`);
      mapped.push(`metadata.difficulty -> difficulty: ${config.difficulty}`);
    } else
      unmapped.push(
        `metadata.difficulty ${JSON.stringify(config.difficulty)}: scifi knows easy, medium, hard`,
      );
  }
  if (config.gpuTypes?.length)
    unmapped.push(
      `environment.gpu_types ${config.gpuTypes.join(", ")}: scifi requests a number of GPUs, not their type`,
    );
  if (config.dockerImage)
    unmapped.push(
      `environment.docker_image ${config.dockerImage}: the sandbox uses the site's image (set \`image:\` to an equivalent)`,
    );
  if (config.storage)
    unmapped.push(
      `environment storage ${config.storage}: scifi sets no disk limit on the task folder (\`scratch:\` is extra space)`,
    );
  if (config.buildTimeoutSec !== undefined)
    unmapped.push("environment.build_timeout_sec: scifi builds no image for a task");
  for (const e of config.env)
    if (e.names.length)
      unmapped.push(
        `${e.where} (${e.names.join(", ")}): scifi passes no environment variables into a sandbox; values not copied`,
      );
  for (const u of config.users)
    unmapped.push(
      `${u.where} = ${JSON.stringify(u.user)}: sandboxes run as the invoking user, never another`,
    );
  for (const k of config.unknown) unmapped.push(`${configName} ${k}: no SAM key for it`);
  return lines;
}

function samText(
  meta: string[],
  config: HarborConfig,
  todo: string,
  outputs: string[],
  assets: string[],
  workdir: string,
  threshold: number,
): string {
  // Quoted: a test file named `a, input.txt` or `a #x` is one name, not two or a comment.
  const list = `[${assets.map((a) => (/^[A-Za-z0-9_./-]+$/.test(a) ? a : JSON.stringify(a))).join(", ")}]`;
  const timeout = Math.ceil(config.verifierTimeoutSec ?? 600);
  const title = (config.description ?? meta[0]?.slice("name: ".length) ?? "Harbor task")
    .replace(/\s+/g, " ")
    .trim();
  return `---
${meta.join("\n")}
check_assets: ${list}
hidden_assets: ${list}
---
# ${title}

## Context
Imported from a Harbor task by \`scifi import harbor\` (what could not be mapped: \`harbor-import.md\`).
Harbor's working folder \`${workdir}\` is this task folder: a path \`${workdir}/x\` in the To-do is \`x\` here.
Hidden tests judge the result; they read ${outputs.map((o) => `\`${o}\``).join(", ")}.

## To-do
${todo}

## Expectation
- Harbor's tests give the full reward (${rewardRule(threshold)}) on the files delivered.
  \`\`\`check timeout=1m outputs=${outputs.join(",")}
  ls -l -- ${outputs.join(" ")}
  \`\`\`
  \`\`\`compare timeout=${timeout}s
  bash ${CHECKS}/verify.sh
  \`\`\`
`;
}

function notesText(taskDir: string, r: HarborImport): string {
  const list = (items: string[]) => items.map((m) => `- ${m}`).join("\n");
  const unpassable = r.unpassable.length
    ? `\n## Cannot pass here (imported with --allow-unpassable; the SAM says \`unpassable:\`)\n${list(r.unpassable)}\n`
    : "";
  return `# Imported from ${r.layout === "harbor" ? "Harbor" : "Terminal-Bench (task.yaml)"}

Source: \`${taskDir}\`. SAM: \`task.md\` (\`scifi validate\` it; \`scifi plan\` shows the sandbox).
The tests' tools were looked up in the image \`${r.image}\`.
${unpassable}
## Mapped
${list(r.mapped)}

## Not mapped
${r.unmapped.length ? list(r.unmapped) : "- (nothing)"}
`;
}

/** The errors a SAM parse of `text` (as the file `file`) reports, formatted. */
function samErrors(text: string, file: string): string[] {
  return parseSamString(text, file)
    .diagnostics.filter((d) => d.severity === "error")
    .map((d) => `line ${d.line}: ${d.message}`);
}

/** Paths `<workdir>/x` a test names, relative to the workdir (the agent's files it reads). */
function pathsUnder(text: string, workdir: string): string[] {
  const re = new RegExp(`(?<![\\w./-])${escapeRe(workdir)}/([A-Za-z0-9._-][A-Za-z0-9._/-]*)`, "g");
  return [...text.matchAll(re)]
    .map((m) => (m[1] as string).replace(/\/+$/, ""))
    .filter((p) => !p.endsWith("*"));
}

/** A workdir path a test runs (in command position, or handed to a shell or interpreter), if any. */
function runsAgentFile(text: string, workdir: string): string | undefined {
  const re = new RegExp(
    String.raw`(?:^|[;&|(\x60]|\$\()\s*(?:(?:bash|sh|dash|source|\.|exec|python3?|perl|node|ruby|Rscript)\s+(?:-\S+\s+)*)?(${escapeRe(workdir)}/[A-Za-z0-9._/-]+)`,
    "gm",
  );
  return re.exec(text)?.[1];
}

/** Harbor's fixed paths in a test, pointed at what the compare stage's folder holds. */
function rewritePaths(text: string, workdir: string): string {
  const at = (path: string) => new RegExp(`(?<![\\w./-])${escapeRe(path)}(?=[/\\s"'\`;:)]|$)`, "gm");
  return text
    .replace(at("/logs/verifier"), "/task/.harbor/verifier")
    .replace(at("/tests"), `/task/${CHECKS}/tests`)
    .replace(at(workdir), "/task/outputs");
}

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
