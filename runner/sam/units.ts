// Unit parsing for SAM metadata: durations to seconds, sizes to bytes, money to USD.
// Each parser returns a number or undefined; the caller turns undefined into a diagnostic that
// names the expected form, so the accepted syntax is documented in one place (docs/sam-format.md).

const DURATION_PART = /(\d+(?:\.\d+)?)\s*(d|h|m|s)/gy;
const SECONDS_PER: Record<string, number> = { d: 86_400, h: 3_600, m: 60, s: 1 };

/** `H:MM:SS` and `D-HH:MM:SS`, the clock forms `scifi submit --time` and sbatch take. */
const CLOCK = /^(?:(\d+)-)?(\d+):([0-5]\d):([0-5]\d)$/;

/**
 * `90m`, `2h`, `1h30m`, `45s`, `1d`, `1:30:00`, `1-00:00:00` -> seconds. A bare number is rejected:
 * the unit must be explicit.
 */
export function parseDuration(text: string): number | undefined {
  const compact = text.trim().toLowerCase().replace(/\s+/g, "");
  if (compact === "") return undefined;
  const clock = CLOCK.exec(compact);
  if (clock) {
    const [d, h, m, s] = clock.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number];
    const total = ((d * 24 + h) * 60 + m) * 60 + s;
    return total > 0 ? total : undefined;
  }
  DURATION_PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let match = DURATION_PART.exec(compact); match; match = DURATION_PART.exec(compact)) {
    total += Number(match[1]) * (SECONDS_PER[match[2] ?? ""] ?? Number.NaN);
    consumed = DURATION_PART.lastIndex;
  }
  if (consumed !== compact.length || !Number.isFinite(total) || total <= 0) return undefined;
  return Math.round(total);
}

const UNIT_WORDS: [RegExp, string][] = [
  [/(\d)(?:minutes?|mins?)/g, "$1m"],
  [/(\d)(?:hours?|hrs?)/g, "$1h"],
  [/(\d)(?:seconds?|secs?)/g, "$1s"],
  [/(\d)days?/g, "$1d"],
];

/** What a duration written with unit words means in scifi's units (`30min` -> `30m`), if it parses. */
export function durationSuggestion(text: string): string | undefined {
  let compact = text.trim().toLowerCase().replace(/\s+/g, "");
  for (const [word, unit] of UNIT_WORDS) compact = compact.replace(word, unit);
  return compact !== text.trim() && parseDuration(compact) !== undefined ? compact : undefined;
}

// Sizes follow SLURM and Docker: K/M/G/T are powers of 1024, with or without `i` and `B`.
const SIZE = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)$/i;
const BYTES_PER: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** `4G`, `512Mi`, `2GiB`, `100MB`, `1024B` -> bytes. A bare number is rejected. */
export function parseSize(text: string): number | undefined {
  const match = SIZE.exec(text.trim());
  if (!match) return undefined;
  const prefix = (match[2] ?? "").toLowerCase();
  const suffix = (match[3] ?? "").toLowerCase();
  // Without a prefix only an explicit `B` counts as a unit (`512` alone is ambiguous).
  if (prefix === "" && suffix !== "b") return undefined;
  const bytes = Math.round(Number(match[1]) * (BYTES_PER[prefix] ?? Number.NaN));
  return Number.isFinite(bytes) && bytes > 0 ? bytes : undefined;
}

const USD = /^(?:\$\s*)?(\d+(?:\.\d+)?)(?:\s*usd)?$/i;

/** `5`, `2.50`, `$3`, `3 USD` -> USD. */
export function parseUsd(value: number | string): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value : undefined;
  const match = USD.exec(value.trim());
  return match ? Number(match[1]) : undefined;
}
