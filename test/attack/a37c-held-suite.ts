// Attacker on issue 37's check views (a37c): what HELD, on the view kinds this machine mounts (the
// kernel overlay of a root runner here; fuse-overlayfs and the copy inside the Apptainer harness,
// test/sandbox/apptainer/a37c-held.inner.ts). Each case is a task folder as a hostile work pass
// (a user that is not root, as in every sandbox) could leave it, and what a check's view shows.
// What broke is in test/open/a37c-*.pending.ts.
import { execFileSync, spawnSync } from "node:child_process";
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  dropCheckView,
  layersDir,
  makeCheckView,
  type ViewKind,
} from "../../runner/run/checks/check-view.ts";

const root = process.getuid?.() === 0;
/** The sandbox's user of a root runner (docs/sandbox.md `sandboxUser`). */
const AGENT = 65534;
const GiB = 1024 ** 3;

/** A shell command as the agent would run it: never root. */
function asAgent(script: string, cwd: string): { status: number | null; stderr: string } {
  const argv = root
    ? ["setpriv", `--reuid=${AGENT}`, `--regid=${AGENT}`, "--clear-groups", "sh", "-c", script]
    : ["sh", "-c", script];
  const r = spawnSync(argv[0] as string, argv.slice(1), { cwd, encoding: "utf8" });
  return { status: r.status, stderr: r.stderr };
}

/** setxattr(2) by number (x86_64: 188), as the agent: no attr tools in the images. */
function setXattrScript(path: string, name: string, value: string): string {
  return `perl -e 'syscall(188, $ARGV[0], $ARGV[1], $ARGV[2], length($ARGV[2]), 0) == 0 or die "$!\\n"' ${JSON.stringify(path)} ${JSON.stringify(name)} ${JSON.stringify(value)}`;
}

function listing(dir: string): string[] {
  return execFileSync("find", [dir, "-mindepth", "1", "-printf", "%P|%y|%s\\0"], { encoding: "utf8" })
    .split("\0")
    .filter(Boolean)
    .sort();
}

export function a37cHeldSuite(kinds: ViewKind[]): void {
  describe("a37c: a check's view against a hostile work pass (held)", () => {
    const base = mkdtempSync(join(tmpdir(), "a37c-held-"));
    afterAll(() => {
      for (const entry of readdirSync(base)) dropCheckView(join(base, entry));
      rmSync(base, { recursive: true, force: true });
    });

    /** An empty task folder the agent owns (lent to it, as a root runner does). */
    function agentFolder(name: string): string {
      const task = join(base, name);
      mkdirSync(task, { recursive: true });
      if (root) chownSync(task, AGENT, AGENT);
      return task;
    }

    for (const kind of kinds) {
      it(`${kind}: forged overlay xattrs (user.overlay.*, user.fuseoverlayfs.*) change nothing in the view; trusted.overlay.* cannot be set`, () => {
        const task = agentFolder(`xattr-${kind}`);
        const work = [
          "mkdir -p a b/inner && echo A > a/f && echo B > b/inner/g && echo S > s.txt && echo M > m.txt",
          setXattrScript("b", "user.overlay.opaque", "y"),
          setXattrScript("b", "user.fuseoverlayfs.opaque", "y"),
          setXattrScript("a", "user.overlay.redirect", "/b"),
          setXattrScript("m.txt", "user.overlay.metacopy", ""),
          setXattrScript("m.txt", "user.overlay.redirect", "/s.txt"),
          setXattrScript("s.txt", "user.containers.override_stat", "0:0:04755"),
        ].join(" && ");
        const done = asAgent(work, task);
        expect(done.stderr).toBe("");
        expect(done.status).toBe(0);
        // The kernel honours only trusted.overlay.* without `userxattr`: the agent cannot set them.
        for (const name of [
          "trusted.overlay.opaque",
          "trusted.overlay.redirect",
          "trusted.overlay.metacopy",
        ]) {
          const forged = asAgent(setXattrScript("a", name, "y"), task);
          expect(forged.status, name).not.toBe(0);
          expect(forged.stderr, name).toMatch(/not permitted/i);
        }
        const before = listing(task);
        const view = makeCheckView(task, join(base, `view-xattr-${kind}`), { maxBytes: GiB, kinds: [kind] });
        expect(view.kind).toBe(kind);
        expect(listing(view.dir)).toEqual(before);
        expect(readFileSync(join(view.dir, "a", "f"), "utf8")).toBe("A\n");
        expect(readFileSync(join(view.dir, "b", "inner", "g"), "utf8")).toBe("B\n");
        expect(readFileSync(join(view.dir, "m.txt"), "utf8")).toBe("M\n");
        expect(statSync(join(view.dir, "s.txt")).mode & 0o7777).toBe(
          statSync(join(task, "s.txt")).mode & 0o7777,
        );
        dropCheckView(view.dir);
      });

      it(`${kind}: a whiteout device (char 0/0, which a user that is not root may make) is left out as any device`, () => {
        const task = agentFolder(`whiteout-${kind}`);
        const made = asAgent("echo kept > kept.txt && mkdir d && echo x > d/x && mknod d/gone c 0 0", task);
        if (made.status !== 0) {
          // Where the kernel or the engine refuses it (the Apptainer harness), the agent cannot make one.
          expect(made.stderr).toMatch(/mknod: d\/gone: Operation not permitted/);
          return;
        }
        expect(lstatSync(join(task, "d", "gone")).isCharacterDevice()).toBe(true);
        const view = makeCheckView(task, join(base, `view-wh-${kind}`), { maxBytes: GiB, kinds: [kind] });
        expect(view.kind).toBe(kind);
        expect(view.skipped).toEqual(["d/gone"]);
        expect(existsSync(join(view.dir, "d", "gone"))).toBe(false);
        expect(readFileSync(join(view.dir, "d", "x"), "utf8")).toBe("x\n");
        expect(readFileSync(join(view.dir, "kept.txt"), "utf8")).toBe("kept\n");
        dropCheckView(view.dir);
      });

      it(`${kind}: one check's whiteout, opaque folder or hard-link write stays in its own view`, () => {
        const task = agentFolder(`reach-${kind}`);
        const made = asAgent("mkdir -p src && echo 1 > src/a && echo 2 > src/b && ln src/a twin", task);
        expect(made.status, made.stderr).toBe(0);
        const before = listing(task);
        const viewDir = join(base, `view-reach-${kind}`);
        const first = makeCheckView(task, viewDir, { maxBytes: GiB, kinds: [kind] });
        expect(first.kind).toBe(kind);
        // The first check writes through one hard-linked name, replaces src by an opaque folder of
        // its own and leaves a whiteout device: all of it lands in its upper layer or copy.
        writeFileSync(join(viewDir, "twin"), "forged\n");
        rmSync(join(viewDir, "src"), { recursive: true });
        mkdirSync(join(viewDir, "src"));
        writeFileSync(join(viewDir, "src", "a"), "forged\n");
        execFileSync("sh", ["-c", "mknod src/b c 0 0 2>/dev/null || true"], { cwd: viewDir });
        const second = makeCheckView(task, viewDir, { maxBytes: GiB, kinds: [kind] });
        expect(second.kind).toBe(kind);
        expect(readFileSync(join(viewDir, "twin"), "utf8")).toBe("1\n");
        expect(readFileSync(join(viewDir, "src", "a"), "utf8")).toBe("1\n");
        expect(readFileSync(join(viewDir, "src", "b"), "utf8")).toBe("2\n");
        expect(listing(task)).toEqual(before);
        expect(lstatSync(join(task, "twin")).nlink).toBe(2);
        dropCheckView(viewDir);
      });

      if (kind !== "fuse-overlayfs") {
        // fuse-overlayfs copies it up dense: test/open/a37c-fuse-sparse-copyup.pending.ts.
        it(`${kind}: a check touching a huge sparse file the work left writes no data out`, () => {
          const task = agentFolder(`sparse-${kind}`);
          const made = asAgent("truncate -s 1G big.bin", task);
          expect(made.status, made.stderr).toBe(0);
          const view = makeCheckView(task, join(base, `view-sparse-${kind}`), {
            maxBytes: GiB,
            kinds: [kind],
          });
          expect(view.kind).toBe(kind);
          execFileSync("touch", [join(view.dir, "big.bin")]);
          execFileSync("sh", ["-c", "echo x >> big.bin"], { cwd: view.dir });
          const copied =
            view.kind === "copy" ? join(view.dir, "big.bin") : join(layersDir(view.dir), "upper", "big.bin");
          expect(statSync(copied).blocks * 512).toBeLessThan(1024 * 1024);
          expect(statSync(join(task, "big.bin")).size).toBe(GiB);
          dropCheckView(view.dir);
        });
      }

      it(`${kind}: names with , : \\ spaces and newlines inside the task folder are shown as they are`, () => {
        const task = agentFolder(`names-${kind}`);
        const names = ["a,b", "c:d", "e\\f", "g h", "i\nj", "lowerdir=x", "-o"];
        if (kind !== "fuse-overlayfs") names.push(".wh.a,b", ".wh..wh..opq"); // fuse: a37c-fuse-whiteout-name
        for (const n of names) writeFileSync(join(task, n), `${n}\n`);
        const view = makeCheckView(task, join(base, `view-names-${kind}`), { maxBytes: GiB, kinds: [kind] });
        expect(view.kind).toBe(kind);
        for (const n of names) expect(readFileSync(join(view.dir, n), "utf8")).toBe(`${n}\n`);
        expect(listing(view.dir)).toEqual(listing(task));
        dropCheckView(view.dir);
      });
    }

    it("a task folder path with a space or comma forces the copy, says why, and the copy keeps every rule", () => {
      const task = agentFolder("odd path, with:colon");
      const made = asAgent(
        "echo r > r.txt && mkfifo p && echo '#!/bin/sh' > tool && chmod 4755 tool && echo w > .wh.r.txt",
        task,
      );
      expect(made.status, made.stderr).toBe(0);
      const view = makeCheckView(task, join(base, "view-odd"), { maxBytes: GiB });
      expect(view.kind).toBe("copy");
      // Either reason forces the copy: the path's characters, or (fuse-overlayfs) the `.wh.` name.
      for (const why of view.notUsed)
        expect(why).toMatch(/character mount options cannot carry|a name fuse-overlayfs reads as a whiteout/);
      expect(view.notUsed.length).toBeGreaterThanOrEqual(kinds.length - 1);
      expect(view.skipped).toEqual(["p"]);
      expect(statSync(join(view.dir, "tool")).mode & 0o7000).toBe(0);
      expect(readFileSync(join(view.dir, "r.txt"), "utf8")).toBe("r\n");
      expect(readFileSync(join(view.dir, ".wh.r.txt"), "utf8")).toBe("w\n");
      dropCheckView(view.dir);
    });
  });
}
