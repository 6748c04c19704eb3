// The checks' copy of the task folder (runner/run/checks/check-copy.ts) sees every entry: names that are
// not UTF-8 are copied (a sparse file stays sparse), links among them removed, no set-id bit kept.
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { copyForChecks } from "../../../runner/run/checks/check-copy.ts";

const FF = Buffer.from([0xff]);

function at(root: string, ...parts: Buffer[]): Buffer {
  return Buffer.concat([Buffer.from(root), ...parts.flatMap((p) => [Buffer.from("/"), p])]);
}

it("copies names that are not UTF-8, keeps a sparse one sparse, and removes a link named so", () => {
  const root = mkdtempSync(join(tmpdir(), "scifi-check-copy-"));
  const src = join(root, "task");
  const dest = join(root, "copy");
  mkdirSync(src);
  mkdirSync(at(src, FF));
  writeFileSync(at(src, FF, Buffer.from("data")), "bytes\n", { mode: 0o4755 });
  writeFileSync(at(src, FF, FF), "");
  truncateSync(at(src, FF, FF), 64 * 1024 * 1024);
  symlinkSync("/etc/passwd", at(src, Buffer.concat([Buffer.from("l"), FF])));
  const skipped = copyForChecks(src, dest, { maxBytes: 1024 ** 3 });
  expect(skipped).toEqual([]);
  expect(readFileSync(at(dest, FF, Buffer.from("data")), "utf8")).toBe("bytes\n");
  expect(statSync(at(dest, FF, Buffer.from("data"))).mode & 0o7777).toBe(0o755);
  const sparse = statSync(at(dest, FF, FF));
  expect(sparse.size).toBe(64 * 1024 * 1024);
  expect(sparse.blocks * 512).toBeLessThan(1024 * 1024);
  // The link is copied as a link, never followed.
  expect(lstatSync(at(dest, Buffer.concat([Buffer.from("l"), FF]))).isSymbolicLink()).toBe(true);
});
