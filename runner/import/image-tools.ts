// Which of the packages a mapped test command needs the sandbox image really holds, asked of the
// image itself: one `docker run` (no network, no capabilities, read-only, as nobody) that looks
// each Python distribution up with importlib.metadata (its version) and each Debian package up
// with dpkg-query. Asked, not assumed: a mapping to "the image's pytest" is only made when that
// image has pytest.
import { execFileSync } from "node:child_process";
import type { Needs } from "./fetch-lines.ts";

/** What the image holds of what was asked: a version (Python), true (Debian), or absent. */
export interface ImageHolds {
  python: Map<string, string>;
  apt: Set<string>;
}

/** Answers what `image` holds of `needs`, or says why it could not be asked. */
export type ImageProbe = (image: string, needs: Needs) => ImageHolds | { error: string };

const SCRIPT = `for a in "$@"; do
  case "$a" in
    apt:*) dpkg-query -W -f='\${Status}\\n' "\${a#apt:}" 2>/dev/null | grep -q 'install ok installed' && echo "$a yes" ;;
    py:*) v=$(python3 -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "\${a#py:}" 2>/dev/null) && echo "$a $v" ;;
  esac
done
true`;

/** The Docker probe (the engine scifi's own sandboxes use). */
export const dockerProbe: ImageProbe = (image, needs) => {
  const args = [...needs.python.map((p) => `py:${p}`), ...needs.apt.map((p) => `apt:${p}`)];
  const holds: ImageHolds = { python: new Map(), apt: new Set() };
  if (args.length === 0) return holds;
  let out: string;
  try {
    out = execFileSync(
      "docker",
      [
        "run",
        "--rm",
        "--network",
        "none",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--read-only",
        "--user",
        "65534:65534",
        "--entrypoint",
        "sh",
        image,
        "-c",
        SCRIPT,
        "sh",
        ...args,
      ],
      { encoding: "utf8", timeout: 120_000, stdio: ["ignore", "pipe", "pipe"] },
    );
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    const why = (e.stderr || e.message).trim().split("\n").at(-1) ?? "docker run failed";
    return { error: `could not look inside ${image} with docker: ${why}` };
  }
  for (const line of out.split("\n")) {
    const m = /^(py|apt):(\S+) (\S+)$/.exec(line.trim());
    if (!m) continue;
    if (m[1] === "py") holds.python.set(m[2] as string, m[3] as string);
    else holds.apt.add(m[2] as string);
  }
  return holds;
};
