// The Docker engine itself: whether it answers, whether an image is there, and its error shapes.
import type Docker from "dockerode";
import type * as contract from "../types.ts";
import { SandboxUnavailable } from "../types.ts";

export const FIX_ENGINE = "bash scripts/start-docker.sh";

export const FIX_IMAGE = "bash scripts/build-image.sh";

export async function dockerStatus(docker: Docker): Promise<contract.BackendStatus> {
  try {
    const v = await docker.version();
    return { available: true, detail: `Docker Engine ${v.Version} (API ${v.ApiVersion})` };
  } catch (error) {
    return { available: false, detail: `no Docker engine answers (${messageOf(error)})`, fix: FIX_ENGINE };
  }
}

export async function requireImage(docker: Docker, image: string): Promise<void> {
  try {
    await docker.getImage(image).inspect();
  } catch (error) {
    if (statusCodeOf(error) === 404) {
      throw new SandboxUnavailable("docker", `the image '${image}' is not present`, FIX_IMAGE);
    }
    throw new SandboxUnavailable("docker", `no Docker engine answers (${messageOf(error)})`, FIX_ENGINE);
  }
}

export function statusCodeOf(error: unknown): number | undefined {
  return typeof error === "object" && error !== null && "statusCode" in error
    ? Number(error.statusCode)
    : undefined;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
