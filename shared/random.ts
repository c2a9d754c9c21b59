/**
 * Deterministic pseudo-randomness for the built-in demo engines and image tools: a string hash to
 * derive a seed from a prompt, and one seeded PRNG. Same seed → same sequence on every machine, so
 * the same request draws the same picture, tune or text.
 */

// Math.imul as a module constant: in hot loops a global lookup of `Math` is slow where the code
// runs in a vm context (a test runner's sandbox), a local binding is not.
const { imul } = Math;

/** A source of floats in [0, 1). */
export type Rng = () => number;

/** cyrb53: a fast 53-bit string hash; good enough to seed a PRNG. */
export function hashString(text: string, seed = 0): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = imul(h1 ^ ch, 2654435761);
    h2 = imul(h2 ^ ch, 1597334677);
  }
  h1 = imul(h1 ^ (h1 >>> 16), 2246822507) ^ imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = imul(h2 ^ (h2 >>> 16), 2246822507) ^ imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** mulberry32: a tiny seeded PRNG (the seed is taken as an unsigned 32-bit integer). */
export function seededRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = imul(t ^ (t >>> 15), t | 1);
    t ^= t + imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
