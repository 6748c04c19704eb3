// "Did you mean" suggestions for unknown keys and section names (Levenshtein distance).

export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The closest candidate within a distance that scales with the word length, or undefined. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const normalised = word.toLowerCase().replace(/-/g, "_");
  // A truncated key (`budget` for `budget_usd`) is a closer guess than any edit distance.
  const prefixed =
    normalised.length >= 4 ? candidates.find((c) => c.toLowerCase().startsWith(normalised)) : undefined;
  if (prefixed) return prefixed;
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(normalised.length / 3)) + 1;
  for (const candidate of candidates) {
    const distance = editDistance(normalised, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
