// "Did you mean" suggestions for misspelt names: front-matter keys, section names, skills, grants
// (Levenshtein distance). One implementation; callers choose how loosely a word is read.

/** Edit distance (insert, delete, substitute) between two strings. */
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

export type ClosestOptions = {
  /**
   * Read the word as a front-matter key (the default): `-` counts as `_`, and a truncated key of
   * 4+ letters (`budget` for `budget_usd`) matches by prefix. Off for names taken literally
   * (skills), where only case is ignored.
   */
  keyStyle?: boolean;
};

/** The closest candidate within a distance that scales with the word length, or undefined. */
export function closest(
  word: string,
  candidates: readonly string[],
  { keyStyle = true }: ClosestOptions = {},
): string | undefined {
  const lower = word.toLowerCase();
  const normalised = keyStyle ? lower.replace(/-/g, "_") : lower;
  // A truncated key is a closer guess than any edit distance.
  const prefixed =
    keyStyle && normalised.length >= 4
      ? candidates.find((c) => c.toLowerCase().startsWith(normalised))
      : undefined;
  if (prefixed) return prefixed;
  // The key style scales with the normalised word, the literal style with the word as given.
  const limit = Math.max(2, Math.floor((keyStyle ? normalised : word).length / 3));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    const distance = editDistance(normalised, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
