// SAM metadata as the parser returns it for a file that asks for nothing (name `demo`, no grants),
// with the fields a test is about overridden.
import type { SamMetadata } from "../../runner/sam/types.ts";

export function plainMetadata(overrides: Partial<SamMetadata> = {}): SamMetadata {
  return {
    name: "demo",
    network: false,
    gpu: 0,
    mounts: [],
    skills: [],
    checkAssets: [],
    subtasks: [],
    ...overrides,
  };
}
