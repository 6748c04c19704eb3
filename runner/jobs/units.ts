// SLURM's time and memory notations, parsed and written exactly (pure functions, unit-tested).

/**
 * Parses a SLURM time limit into seconds. Accepted forms (as sbatch --time): `M`, `M:S`, `H:M:S`,
 * `D-H`, `D-H:M`, `D-H:M:S`; a number is minutes. Returns undefined for anything else.
 */
export function parseSlurmTime(value: string | number): number | undefined {
  if (typeof value === "number")
    return Number.isFinite(value) && value > 0 ? Math.ceil(value * 60) : undefined;
  const text = value.trim();
  const withDays = /^(\d+)-(\d+)(?::(\d+))?(?::(\d+))?$/.exec(text);
  if (withDays) {
    const [d, h, m, s] = withDays.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number];
    return ((d * 24 + h) * 60 + m) * 60 + s;
  }
  const parts = text.split(":");
  if (parts.length > 3 || parts.some((p) => !/^\d+$/.test(p))) return undefined;
  const n = parts.map(Number);
  if (n.length === 1) return (n[0] as number) * 60;
  if (n.length === 2) return (n[0] as number) * 60 + (n[1] as number);
  return ((n[0] as number) * 60 + (n[1] as number)) * 60 + (n[2] as number);
}

/** Seconds as sbatch --time: `H:MM:SS`, or `D-HH:MM:SS` from one day on. Rounds up to whole seconds. */
export function formatSlurmTime(seconds: number): string {
  const total = Math.max(1, Math.ceil(seconds));
  const days = Math.floor(total / 86_400);
  const h = Math.floor((total % 86_400) / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const hms = `${days > 0 ? String(h).padStart(2, "0") : h}:${pad(m)}:${pad(s)}`;
  return days > 0 ? `${days}-${hms}` : hms;
}

const pad = (n: number) => String(n).padStart(2, "0");

const MEMORY_UNITS: Record<string, number> = { K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** Parses a memory size as sbatch --mem does (`512`, `512M`, `2G`, `1T`; a bare number is MiB) into bytes. */
export function parseSlurmMemory(value: string | number): number | undefined {
  if (typeof value === "number")
    return Number.isFinite(value) && value > 0 ? Math.ceil(value) * 1024 ** 2 : undefined;
  const m = /^(\d+(?:\.\d+)?)\s*([KMGT])?(?:i?B)?$/i.exec(value.trim());
  if (!m) return undefined;
  const bytes = Number(m[1]) * (MEMORY_UNITS[(m[2] ?? "M").toUpperCase()] ?? 1024 ** 2);
  return bytes > 0 ? Math.ceil(bytes) : undefined;
}

/** Bytes as sbatch --mem: whole `G` when exact, else MiB rounded up (`M`). */
export function formatSlurmMemory(bytes: number): string {
  const gib = 1024 ** 3;
  if (bytes % gib === 0) return `${bytes / gib}G`;
  return `${Math.ceil(bytes / 1024 ** 2)}M`;
}

/** Human-readable bytes for messages, e.g. `2 GiB`, `512 MiB`. */
export function describeBytes(bytes: number): string {
  const gib = bytes / 1024 ** 3;
  if (gib >= 1 && Number.isInteger(gib * 10)) return `${gib} GiB`;
  return `${Math.ceil(bytes / 1024 ** 2)} MiB`;
}
