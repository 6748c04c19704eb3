// `scifi import harbor`: a Harbor / Terminal-Bench task folder (task.toml, instruction.md,
// environment/Dockerfile, tests/test.sh, solution/solve.sh) as a SAM folder.
//
// The mapping keeps scifi's trust model (docs/loop.md, "Checks in stages"): Harbor runs its tests in
// the container the agent worked in; here they become hidden assets run by a **compare stage**,
// which sees the runner's copies of the tests and the agent's files only as declared outputs (the
// files the tests read under the working folder, `/app/...`), never the agent's task folder. A run
// stage before it declares those outputs. Harbor's fixed paths are rewritten in the copies of the
// tests: /tests -> the hidden tests, /logs/verifier -> a scratch folder, /app -> the outputs. The
// reward (reward.txt, or every metric of reward.json) must reach the pass threshold (default 1).
// What cannot be mapped (base image, GPU types, build steps, users, environment variables,
// Harbor's default of open internet) is listed, printed and written to harbor-import.md.
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import { parseSamString } from "../sam/parse.ts";
import { type DockerfileFacts, readDockerfile } from "./dockerfile.ts";
import { type HarborConfig, HarborImportError, readHarborConfig } from "./harbor-config.ts";
import { stagedImport } from "./output-gate.ts";

export { HarborImportError } from "./harbor-config.ts";

export interface HarborImportOptions {
  /** Extra files of the agent's the tests read (relative to Harbor's working folder). */
  outputs?: string[];
  /** Reward a metric must reach to pass (default 1). */
  passThreshold?: number;
  /** The scifi home whose skills library the gate checks skill names against (default: SCIFI_HOME). */
  home?: string;
}

export interface HarborImport {
  outDir: string;
  sam: string;
  /** What was mapped, each as `Harbor thing -> SAM thing`. */
  mapped: string[];
  /** What was not mapped, and why. */
  unmapped: string[];
  /** The agent's files the hidden tests read (the run stage's declared outputs). */
  outputs: string[];
}

/** Folder of the hidden tests and the generated verifier inside the SAM folder. */
const CHECKS = "checks/harbor";
const MAX_FILE_BYTES = 64 * 2 ** 20;
const MAX_FILES = 2_000;
/** Extensions of code: a compare stage reads outputs as data, never runs them. */
const CODE = /\.(py|sh|bash|c|cc|cpp|h|hpp|f|f90|v|sv|js|ts|rb|pl|r|jl|go|rs|java|mod|so)$/i;
const NETWORKY = /\b(apt-get|apt|pip3?|uv|uvx|curl|wget|npm|conda)\b/;

export function importHarbor(
  taskDir: string,
  outDir: string,
  options: HarborImportOptions = {},
): HarborImport {
  const need = (rel: string, kind: "file" | "dir") => {
    const s = lstatSync(join(taskDir, rel), { throwIfNoEntry: false });
    const ok = kind === "file" ? s?.isFile() : s?.isDirectory();
    if (!ok)
      throw new HarborImportError(
        `${join(taskDir, rel)}: ${s ? `not a regular ${kind === "file" ? "file" : "folder"}` : "missing"}; a Harbor task folder holds task.toml, instruction.md, environment/ and tests/test.sh`,
      );
  };
  if (!lstatSync(taskDir, { throwIfNoEntry: false })?.isDirectory())
    throw new HarborImportError(`${taskDir} is not a folder; pass a Harbor task folder (with task.toml)`);
  need("task.toml", "file");
  need("instruction.md", "file");
  need("tests", "dir");
  need("tests/test.sh", "file");
  const config = readHarborConfig(readText(join(taskDir, "task.toml")), join(taskDir, "task.toml"));
  if (config.steps > 0)
    throw new HarborImportError(
      `${join(taskDir, "task.toml")}: a multi-step task ([[steps]], ${config.steps}) cannot be imported: write one SAM per step with sub-SAMs by hand`,
    );
  const instruction = readText(join(taskDir, "instruction.md")).trim();
  if (instruction === "")
    throw new HarborImportError(`${join(taskDir, "instruction.md")} is empty: it is the task's To-do`);
  const dockerfile = join(taskDir, "environment", "Dockerfile");
  const docker: DockerfileFacts = lstatSync(dockerfile, { throwIfNoEntry: false })?.isFile()
    ? readDockerfile(readText(dockerfile))
    : readDockerfile("");
  const out = lstatSync(outDir, { throwIfNoEntry: false });
  if (out && (!out.isDirectory() || readdirSync(outDir).length > 0))
    throw new HarborImportError(`${outDir} exists and is not an empty folder; choose another output (-o)`);

  const mapped: string[] = [];
  const unmapped: string[] = [];
  const threshold = options.passThreshold ?? 1;
  const workdir = docker.workdir;

  // The hidden tests, with Harbor's fixed paths rewritten; the outputs they read are collected.
  const tests = listTree(join(taskDir, "tests"));
  const found = new Set<string>();
  const rewritten = new Map<string, string>();
  for (const rel of tests) {
    const text = readText(join(taskDir, "tests", rel));
    for (const path of pathsUnder(text, workdir)) found.add(path);
    const run = runsAgentFile(text, workdir);
    if (run)
      throw new HarborImportError(
        `tests/${rel} runs ${run}, the agent's file, as a program: a scifi compare stage reads the agent's files as data only (docs/loop.md, "Checks in stages"); split the test into a run stage that executes it and a compare stage by hand`,
      );
    const lines = text.split("\n");
    lines.forEach((line, i) => {
      // Named by program only: the notes sit in the task folder, and the tests are hidden.
      const program = line.trimStart().startsWith("#") ? undefined : NETWORKY.exec(line)?.[1];
      if (program)
        unmapped.push(
          `tests/${rel}:${i + 1} runs ${program}, which fetches or installs software: checks run without network; the image must already hold it`,
        );
    });
    rewritten.set(rel, rewritePaths(text, workdir));
  }
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
    for (const copy of docker.copies) {
      const from = join(taskDir, "environment", copy.from);
      if (linkOnTheWay(taskDir, from))
        throw new HarborImportError(
          `Dockerfile line ${copy.line}: COPY ${copy.from} passes through a symbolic link or leaves environment/; the import copies files of the task only (replace the link by the folder it names)`,
        );
      const s = lstatSync(from, { throwIfNoEntry: false });
      if (!s || s.isSymbolicLink() || !(s.isFile() || s.isDirectory())) {
        unmapped.push(
          `Dockerfile line ${copy.line}: COPY ${copy.from}: not a file or folder in environment/`,
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
      }
      mapped.push(`Dockerfile line ${copy.line} COPY ${copy.from} -> ${copy.to || "."} in the task folder`);
    }
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

    const meta = metadata(config, taskDir, mapped, unmapped);
    for (const d of docker.unmapped)
      unmapped.push(
        `Dockerfile line ${d.line}: \`${d.text.slice(0, 100)}\`: the sandbox uses the site's image (set \`image:\` to one that has what this builds)`,
      );
    if (lstatSync(join(taskDir, "solution"), { throwIfNoEntry: false }))
      unmapped.push(
        "solution/ is not copied: the agent would see it (Harbor's oracle solution; apply it yourself to check the checks)",
      );

    const sam = join(dir, "task.md");
    const text = (todo: string) => samText(meta, config, todo, outputs, assets, workdir, threshold);
    let samSource = text(demoteHeadings(instruction));
    const structure = samErrors(samSource, sam);
    if (structure.length > 0) {
      // The instruction holds Markdown a SAM reads as its own (a section heading, a check block, an
      // unclosed fence): quoted whole in a fence, it stays verbatim and the To-do stays one section.
      samSource = text(quoteVerbatim(instruction));
      mapped.push(
        `instruction.md -> the To-do, quoted verbatim in a fence: as Markdown it would have been read as SAM structure (${structure[0]})`,
      );
      const still = samErrors(samSource, sam);
      if (still.length > 0)
        throw new HarborImportError(
          `${join(taskDir, "instruction.md")}: the imported SAM would not validate: ${still.join("; ")}`,
        );
    }
    writeFileSync(sam, samSource);
    const result: HarborImport = { outDir, sam: join(outDir, "task.md"), mapped, unmapped, outputs };
    writeFileSync(join(dir, "harbor-import.md"), notesText(taskDir, result));
    return result;
  });
}

function metadata(config: HarborConfig, taskDir: string, mapped: string[], unmapped: string[]): string[] {
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
      "environment.allow_internet is not set: Harbor allows the internet by default, scifi denies it; add `network: true` if the task needs it",
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
  for (const k of config.unknown) unmapped.push(`task.toml ${k}: no SAM key for it`);
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
  return `# Imported from Harbor

Source: \`${taskDir}\`. SAM: \`task.md\` (\`scifi validate\` it; \`scifi plan\` shows the sandbox).

## Mapped
${r.mapped.map((m) => `- ${m}`).join("\n")}

## Not mapped
${r.unmapped.length ? r.unmapped.map((m) => `- ${m}`).join("\n") : "- (nothing)"}
`;
}

const rewardRule = (t: number): string => `reward.txt, or every metric of reward.json, at least ${t}`;

/** The errors a SAM parse of `text` (as the file `file`) reports, formatted. */
function samErrors(text: string, file: string): string[] {
  return parseSamString(text, file)
    .diagnostics.filter((d) => d.severity === "error")
    .map((d) => `line ${d.line}: ${d.message}`);
}

/** The instruction inside a tilde fence longer than any tilde run in it, so nothing in it closes it. */
function quoteVerbatim(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/~+/g)].map((m) => m[0].length));
  const fence = "~".repeat(Math.max(3, longest + 1));
  return `The task's instruction, verbatim (Harbor's \`instruction.md\`; its Markdown is quoted, not part of this SAM):

${fence}markdown
${text}
${fence}`;
}

/** Instruction headings two levels deeper, so they sit inside the To-do section (code blocks untouched). */
function demoteHeadings(text: string): string {
  let fence: string | undefined;
  return text
    .split("\n")
    .map((line) => {
      const f = /^\s*(`{3,}|~{3,})/.exec(line);
      if (f) {
        const mark = (f[1] as string)[0] as string;
        if (fence === undefined) fence = mark;
        else if (fence === mark) fence = undefined;
        return line;
      }
      if (fence !== undefined) return line;
      const h = /^(#{1,6})(\s.*)$/.exec(line);
      if (!h) return line;
      const level = (h[1] as string).length + 2;
      return level <= 6 ? `${"#".repeat(level)}${h[2]}` : `**${(h[2] as string).trim()}**`;
    })
    .join("\n");
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

/** The compare stage: Harbor's test.sh, then its reward against the threshold. */
function verifier(threshold: number): string {
  return `# Generated by scifi import harbor: runs Harbor's tests/test.sh on the agent's declared outputs
# (/task/outputs) and passes when ${rewardRule(threshold)}.
set -u
rm -rf /task/.harbor && mkdir -p /task/.harbor/verifier /task/.harbor/work
cd /task/.harbor/work
bash /task/${CHECKS}/tests/test.sh
echo "test.sh exited $? (Harbor judges by the reward, not the exit code)"
python3 - /task/.harbor/verifier ${threshold} <<'PY'
import json, math, os, sys
folder, threshold = sys.argv[1], float(sys.argv[2])
txt, js = os.path.join(folder, "reward.txt"), os.path.join(folder, "reward.json")
if os.path.isfile(js):
    with open(js) as f:
        rewards = json.load(f)
    if not isinstance(rewards, dict) or not rewards:
        sys.exit("reward.json is not an object of metrics")
elif os.path.isfile(txt):
    with open(txt) as f:
        rewards = {"reward": float(f.read().strip())}
else:
    sys.exit("test.sh wrote neither reward.txt nor reward.json")
low = []
for name, value in rewards.items():
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        sys.exit(f"metric {name} is not a number: {value!r}")
    print(f"{name} = {value}")
    if value < threshold:
        low.append(name)
if low:
    sys.exit(f"below {threshold}: {', '.join(low)}")
print("every metric reached", threshold)
PY
`;
}

/** Regular files under `dir` (relative paths, sorted); a link, device or FIFO is an error. */
function listTree(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, prefix)).sort()) {
    const rel = prefix === "" ? name : `${prefix}/${name}`;
    const s = lstatSync(join(dir, rel));
    if (s.isDirectory()) out.push(...listTree(dir, rel));
    else if (s.isFile()) out.push(rel);
    else
      throw new HarborImportError(
        `${join(dir, rel)} is not a regular file or folder (a link?); refusing to import it`,
      );
    if (out.length > MAX_FILES) throw new HarborImportError(`${dir} holds more than ${MAX_FILES} files`);
  }
  return out;
}

function readBytes(file: string): Buffer {
  const s = lstatSync(file);
  if (!s.isFile()) throw new HarborImportError(`${file} is not a regular file; refusing to read it`);
  if (s.size > MAX_FILE_BYTES)
    throw new HarborImportError(`${file} is ${s.size} bytes, over ${MAX_FILE_BYTES}`);
  return readFileSync(file);
}

const readText = (file: string): string => readBytes(file).toString("utf8");

function write(root: string, rel: string, data: string | Buffer): void {
  const file = join(root, rel);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, data);
}

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Whether a folder between the task folder and `path` is a link (or `path` leaves the task folder):
 * a COPY through `environment/sub -> /elsewhere` would copy a file from outside the task.
 */
function linkOnTheWay(taskDir: string, path: string): boolean {
  const rel = relative(taskDir, path);
  if (rel.startsWith("..") || isAbsolute(rel)) return true;
  let at = taskDir;
  for (const part of rel.split(sep).slice(0, -1)) {
    at = join(at, part);
    if (lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink() !== false) return true;
  }
  return false;
}
