// A size-limited /scratch for unprivileged Apptainer: an ext3 image file it mounts with fuse2fs.
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import * as contract from "../types.ts";
import { BACKEND } from "./engine.ts";

/** A size-limited scratch: an ext3 image file that Apptainer mounts with fuse2fs, unprivileged. */
export async function makeScratchImage(dir: string, sizeBytes: number): Promise<string> {
  const image = join(dir, "scratch.ext3");
  const mib = Math.max(1, Math.ceil(sizeBytes / (1024 * 1024)));
  const mkfs = await findMkfs();
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  const r = await execa(mkfs, ["-q", "-F", "-m", "0", "-E", `root_owner=${uid}:${gid}`, image, `${mib}M`], {
    reject: false,
  });
  if (r.exitCode !== 0)
    throw new contract.SandboxError(`could not make the scratch image (${mkfs}): ${String(r.stderr).trim()}`);
  return image;
}

export async function findMkfs(): Promise<string> {
  for (const candidate of ["/usr/sbin/mkfs.ext3", "/sbin/mkfs.ext3", "/usr/bin/mkfs.ext3"]) {
    if (await stat(candidate).catch(() => undefined)) return candidate;
  }
  throw new contract.SandboxUnavailable(
    BACKEND,
    "a size-limited scratch needs mkfs.ext3 (e2fsprogs) on this machine",
    "apt-get install -y e2fsprogs",
  );
}
