/**
 * Level table (XP thresholds). Cumulative XP; each level roughly doubles the previous
 * step so early levels come within the first few loans and deposits.
 */
export const LEVELS = [
  { name: "Newcomer", minXp: 0 },
  { name: "Explorer", minXp: 100 },
  { name: "Builder", minXp: 300 },
  { name: "Achiever", minXp: 750 },
  { name: "Expert", minXp: 1500 },
  { name: "Master", minXp: 3000 },
  { name: "Legend", minXp: 6000 },
] as const;

export interface LevelProgress {
  level: string;
  nextLevel: string;
  xpToNextLevel: number;
  progressPercent: number;
}

/** Position of the level reached with `xp` in LEVELS (0 = Newcomer). */
export function levelIndexFor(xp: number): number {
  let index = 0;
  for (let i = 0; i < LEVELS.length; i++) if (xp >= LEVELS[i]!.minXp) index = i;
  return index;
}

export function levelFor(xp: number): LevelProgress {
  const index = levelIndexFor(xp);
  const current = LEVELS[index]!;
  const next = LEVELS[index + 1];
  // At the top level there is nothing left to earn: nextLevel repeats it, progress is 100%.
  if (!next) return { level: current.name, nextLevel: current.name, xpToNextLevel: 0, progressPercent: 100 };
  const span = next.minXp - current.minXp;
  return {
    level: current.name,
    nextLevel: next.name,
    xpToNextLevel: next.minXp - xp,
    progressPercent: Math.floor(((xp - current.minXp) * 100) / span),
  };
}
