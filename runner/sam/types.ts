// The parsed form of a SAM (Self-Assessed Module) task file. Produced deterministically by
// runner/sam/parse.ts (gray-matter + remark, never an LLM); everything downstream reads this.

/** One problem found in a SAM file, printed as `file:line:col: severity: message`. */
export interface Diagnostic {
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  severity: "error" | "warning";
  message: string;
}

/** A deterministic Expectation check: a shell command the runner itself runs in the sandbox; exit 0 passes. */
export interface Check {
  /** Stable id within the SAM, e.g. `1.2/check-1` (node id + ordinal). */
  id: string;
  /** Shell script, run with `sh -c` in the task folder inside the sandbox. */
  command: string;
  /** Seconds before the check is killed and counted as failed. */
  timeoutSec: number;
  /**
   * `compare` (```compare```, or ```check hidden```): the trusted stage. It runs in a fresh sandbox
   * whose working folder the runner builds from its pristine check assets (hidden ones included)
   * and, read-only under `outputs/`, the declared outputs of the run stages of the same node; no
   * file the agent wrote is anywhere else in it. It reports pass or fail only. Absent: a run stage
   * (```check```), which runs the agent's work in the task folder and never sees hidden assets.
   */
  stage?: "compare";
  /** A run stage's declared outputs (```check outputs=a,b```): task-folder paths the runner copies out. */
  outputs?: string[];
  /** Run folders written before stages: ```check hidden```, read as a compare stage. */
  hidden?: boolean;
  /** Source line of the fenced block, for error messages and reports. */
  line: number;
}

/** One item of an Expectation section (a list item, or the whole section when it has no list). */
export interface ExpectationItem {
  /** Stable id, e.g. `1.2/e3`. */
  id: string;
  /** The item's text, verbatim Markdown (without its check blocks). */
  text: string;
  checks: Check[];
  line: number;
}

/** A SAM or sub-SAM: the root document is a SamNode, and so is every nested or referenced sub-SAM. */
export interface SamNode {
  /** `root` for the document, `root/1`, `root/1/2` ... for sub-SAMs, in document order. */
  id: string;
  title: string;
  /** Verbatim Markdown of each section, exactly as written (code blocks, lists and tables kept). */
  context?: string;
  todo: string;
  expectation: string;
  items: ExpectationItem[];
  children: SamNode[];
  /** Where this node was defined: the file (a referenced sub-SAM has its own) and the heading line. */
  source: { file: string; line: number };
}

export interface MountRequest {
  /** Host path as written in the SAM (resolution against the SAM folder happens in policy). */
  host: string;
  /** Absolute path inside the container. */
  container: string;
  mode: "ro" | "rw";
  line: number;
}

/** Normalised front matter: units parsed (seconds, bytes, USD), defaults not yet applied (policy does that). */
export interface SamMetadata {
  name: string;
  group?: string;
  walltimeSec?: number;
  iterations?: number;
  budgetUsd?: number;
  /** `network: true`: unrestricted network (if the site allows it). */
  network: boolean;
  /** `network: [hosts]`: only these hosts, through the run's proxy (runner/network/proxy.ts). */
  networkHosts?: string[];
  gpu: number;
  cpus?: number;
  memoryBytes?: number;
  mounts: MountRequest[];
  scratchBytes?: number;
  jobs?: "slurm";
  skills: string[];
  image?: string;
  difficulty?: "easy" | "medium" | "hard";
  /**
   * Why no solution can pass this task here (set by `scifi import harbor --allow-unpassable`):
   * `scifi validate` warns, and audits and evals can flag the task instead of scoring it blind.
   */
  unpassable?: string;
  /** Model rank hints: rank 1 is the cheapest/smallest tier, higher is stronger. */
  rank?: { work?: number; control?: number };
  /** Human approval required before the named actions (runner/sam/approval-actions.ts: `submit_job`, `finish`...). */
  approval?: string[];
  /** How long a run waits for a decision before it ends blocked (default: the site's, 24h). */
  approvalTimeoutSec?: number;
  /** Files (relative to the SAM folder) that checks run or compare against: hashed, mounted read-only. */
  checkAssets: string[];
  /**
   * Check assets no agent may see (a reference design, expected numbers): out of the task folder while
   * agents run, present read-only only in the check sandbox. Each is also in `checkAssets`.
   */
  hiddenAssets?: string[];
  /** Referenced sub-SAM files, relative to this SAM's folder. */
  subtasks: string[];
  /** Optional command allowlist for the work agent's bash tool (program names). */
  allowCommands?: string[];
  /** `critique:` off | report | approve | block (docs/critique.md); absent: the site's, else `report`. */
  critique?: "off" | "report" | "approve" | "block";
  /** Keep agent-submitted SLURM jobs running after the task ends. */
  keepJobs?: boolean;
}

export interface SamDocument {
  /** Absolute path of the SAM file. */
  file: string;
  /** SHA-256 (hex) of the file's bytes. */
  sha256: string;
  metadata: SamMetadata;
  root: SamNode;
  /** Every file the document was assembled from (root file and referenced sub-SAMs) with its hash. */
  files: { file: string; sha256: string }[];
}

export type ParseResult =
  | { ok: true; sam: SamDocument; diagnostics: Diagnostic[] }
  | { ok: false; diagnostics: Diagnostic[] };
