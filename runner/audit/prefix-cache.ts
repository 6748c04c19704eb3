// Prompt-cache accounting by prefix matching, modelled on Anthropic's rules: a request is cut into
// blocks in cache order (tools, system, messages); a `cache_control` breakpoint writes an entry for
// the prefix ending there; a later request reads the longest earlier entry found at or up to 20
// blocks before one of its breakpoints. Used by the scripted server to report realistic usage and
// by `audit stats` / the benchmark to recompute the cache-read share from the wire bodies on a tape.
import { sha256 } from "../sha256.ts";

/** Anthropic checks this many blocks back from a breakpoint for an earlier cache entry. */
const LOOKBACK_BLOCKS = 20;

export interface CacheUsage {
  input: number;
  cacheRead: number;
  cacheWrite: number;
}

interface Block {
  text: string;
  tokens: number;
  breakpoint: boolean;
}

/** Rough token count used everywhere the scripted model needs one: 4 characters a token. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * The prompt's tokens as the scripted model counts them (the same blocks its usage reports: tools,
 * system, messages), for its context window.
 */
export function promptTokens(format: "anthropic" | "openai", body: unknown): number {
  const blocks = format === "anthropic" ? anthropicBlocks(body) : openaiBlocks(body);
  return sumTokens(blocks, 0, blocks.length - 1);
}

/**
 * The prompt's blocks as prefixes: for each block, the hash of everything up to it and the tokens
 * up to it (the bench measures how much of a request any cache could have served).
 */
export function promptPrefixes(
  format: "anthropic" | "openai",
  body: unknown,
  model = "",
): { hash: string; tokens: number }[] {
  const blocks = format === "anthropic" ? anthropicBlocks(body) : openaiBlocks(body);
  const hashes = prefixHashes(blocks, model);
  let tokens = 0;
  return blocks.map((block, i) => {
    tokens += block.tokens;
    return { hash: hashes[i] ?? "", tokens };
  });
}

export class PrefixCache {
  readonly #entries = new Set<string>();

  /** Usage of one Anthropic Messages request body; remembers the prefixes it writes. */
  accountAnthropic(body: unknown, model = ""): CacheUsage {
    const blocks = anthropicBlocks(body);
    const hashes = prefixHashes(blocks, model);
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));
    let readEnd = -1;
    for (const bp of breakpoints) {
      for (let j = bp; j >= Math.max(0, bp - LOOKBACK_BLOCKS); j--) {
        if (this.#entries.has(hashes[j] ?? "")) {
          readEnd = Math.max(readEnd, j);
          break;
        }
      }
    }
    const lastBreakpoint = breakpoints[breakpoints.length - 1] ?? -1;
    for (const bp of breakpoints) this.#entries.add(hashes[bp] ?? "");
    const read = sumTokens(blocks, 0, readEnd);
    const write = lastBreakpoint > readEnd ? sumTokens(blocks, readEnd + 1, lastBreakpoint) : 0;
    const total = sumTokens(blocks, 0, blocks.length - 1);
    return { input: total - read - write, cacheRead: read, cacheWrite: write };
  }

  /** Usage of one OpenAI Chat Completions body: automatic caching of the longest seen prefix. */
  accountOpenAI(body: unknown, model = ""): CacheUsage {
    const blocks = openaiBlocks(body);
    const hashes = prefixHashes(blocks, model);
    let readEnd = -1;
    for (let j = hashes.length - 1; j >= 0; j--) {
      if (this.#entries.has(hashes[j] ?? "")) {
        readEnd = j;
        break;
      }
    }
    for (const hash of hashes) this.#entries.add(hash);
    const read = sumTokens(blocks, 0, readEnd);
    const total = sumTokens(blocks, 0, blocks.length - 1);
    return { input: total - read, cacheRead: read, cacheWrite: 0 };
  }
}

function sumTokens(blocks: Block[], from: number, to: number): number {
  let sum = 0;
  for (let i = from; i <= to; i++) sum += blocks[i]?.tokens ?? 0;
  return sum;
}

function prefixHashes(blocks: Block[], model: string): string[] {
  const hashes: string[] = [];
  let running = sha256(model);
  for (const block of blocks) {
    running = sha256(running + block.text);
    hashes.push(running);
  }
  return hashes;
}

type Json = Record<string, unknown>;

function toBlock(value: unknown): Block {
  const { cache_control, ...rest } = (value ?? {}) as Json;
  const text = JSON.stringify(rest);
  return { text, tokens: estimateTokens(text), breakpoint: cache_control !== undefined };
}

function anthropicBlocks(body: unknown): Block[] {
  const b = (body ?? {}) as Json;
  const blocks: Block[] = [];
  for (const tool of asArray(b.tools)) blocks.push(toBlock(tool));
  if (typeof b.system === "string") blocks.push(toBlock({ type: "text", text: b.system }));
  for (const part of asArray(b.system)) blocks.push(toBlock(part));
  for (const message of asArray(b.messages)) {
    const m = message as Json;
    const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : asArray(m.content);
    // The role is part of what is cached: fold it into the first block of each message.
    content.forEach((part, i) => {
      blocks.push(toBlock(i === 0 ? { role: m.role, ...(part as Json) } : part));
    });
  }
  return blocks;
}

function openaiBlocks(body: unknown): Block[] {
  const b = (body ?? {}) as Json;
  return [...asArray(b.tools), ...asArray(b.messages)].map(toBlock);
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
