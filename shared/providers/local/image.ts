/**
 * The built-in offline image "model": procedural art drawn from the prompt and the seed. An SVG is
 * composed (a sky gradient, glows, motifs picked from the prompt's words: sun or moon, mountains,
 * hills, water, a skyline, trees, stars, flowers, rain, snow, or abstract shapes; a vignette), its
 * palette derived from colour and mood words (or from hashes of the words), then sharp renders it,
 * overlays octaves of value noise for texture and encodes it (shared/media/image-format.ts). Same prompt + seed → the same bytes
 * (with the same sharp/libvips build); another seed → another composition.
 *
 * With `inputImage` (image-to-image) the art is blended over a copy of the input resized (cover)
 * to the requested size.
 */
import sharp from 'sharp';
import { encodeImage, IMAGE_FORMATS } from '../../media/image-format';
import { hashString, seededRng } from '../../random';
import type { Rng } from '../../random';
import { abortError } from '../abort';
import { ProviderError } from '../types';
import type { CallOptions, FileOutput, ImageProvider, ImageRequest, ImageResult } from '../types';
import { normalizeWord } from './text';

export const MIN_IMAGE_SIDE = 16;
export const MAX_IMAGE_SIDE = 4096;

interface Hsl {
  h: number;
  s: number;
  l: number;
}

const HUE_WORDS: Record<string, number> = {
  red: 0, crimson: 350, scarlet: 5, fire: 12, flame: 15, lava: 10, sunset: 18, orange: 28, autumn: 30, rust: 20,
  amber: 40, desert: 38, sand: 42, gold: 46, golden: 46, honey: 44, yellow: 55, lemon: 58, sunflower: 52,
  lime: 85, spring: 100, grass: 105, green: 120, forest: 130, jungle: 135, emerald: 145, mint: 155, teal: 175,
  turquoise: 178, cyan: 185, ice: 195, water: 198, sea: 200, ocean: 205, sky: 205, river: 200, lake: 202,
  blue: 220, sapphire: 222, navy: 228, winter: 210, night: 235, midnight: 238, indigo: 250, space: 255,
  galaxy: 265, purple: 275, violet: 280, lavender: 270, magenta: 300, berry: 320, pink: 330, rose: 345,
  cherry: 350, wine: 345, chocolate: 25, coffee: 28, wood: 30, earth: 32,
};

const DARK_WORDS = new Set(['night', 'midnight', 'dark', 'space', 'storm', 'shadow', 'moon', 'noir', 'cave', 'deep', 'galaxy', 'stars', 'star']);
const BRIGHT_WORDS = new Set(['sunny', 'bright', 'summer', 'day', 'light', 'morning', 'beach', 'snow', 'white', 'pastel', 'dawn', 'noon']);
const SOFT_WORDS = new Set(['pastel', 'mist', 'misty', 'fog', 'foggy', 'soft', 'calm', 'gentle', 'snow', 'winter', 'quiet', 'dream', 'dreamy', 'natural']);
const VIVID_WORDS = new Set(['vivid', 'neon', 'bold', 'bright', 'electric', 'psychedelic', 'rainbow', 'fire', 'tropical']);

type Motif = 'sun' | 'moon' | 'mountains' | 'hills' | 'water' | 'city' | 'trees' | 'stars' | 'flowers' | 'rain' | 'snow' | 'abstract';

const MOTIF_WORDS: Record<string, Motif> = {
  sun: 'sun', sunny: 'sun', sunset: 'sun', sunrise: 'sun', dawn: 'sun', summer: 'sun', desert: 'sun',
  moon: 'moon', moonlight: 'moon', lunar: 'moon', planet: 'moon',
  mountain: 'mountains', mountains: 'mountains', peak: 'mountains', peaks: 'mountains', alps: 'mountains', volcano: 'mountains', cliff: 'mountains',
  hill: 'hills', hills: 'hills', field: 'hills', fields: 'hills', meadow: 'hills', landscape: 'hills', valley: 'hills', countryside: 'hills', farm: 'hills',
  sea: 'water', ocean: 'water', water: 'water', wave: 'water', waves: 'water', lake: 'water', river: 'water', beach: 'water', harbor: 'water', coast: 'water', boat: 'water',
  city: 'city', town: 'city', building: 'city', buildings: 'city', street: 'city', skyline: 'city', tower: 'city', village: 'city', house: 'city', houses: 'city',
  tree: 'trees', trees: 'trees', forest: 'trees', woods: 'trees', pine: 'trees', jungle: 'trees', park: 'trees',
  star: 'stars', stars: 'stars', night: 'stars', space: 'stars', galaxy: 'stars', sky: 'stars', cosmos: 'stars',
  flower: 'flowers', flowers: 'flowers', garden: 'flowers', bloom: 'flowers', rose: 'flowers', tulip: 'flowers', spring: 'flowers',
  rain: 'rain', rainy: 'rain', storm: 'rain', drizzle: 'rain',
  snow: 'snow', snowy: 'snow', winter: 'snow', blizzard: 'snow', frost: 'snow',
  abstract: 'abstract', pattern: 'abstract', geometric: 'abstract', shapes: 'abstract', art: 'abstract',
};

const FALLBACK_MOTIFS: Motif[] = ['abstract', 'hills', 'water', 'sun', 'mountains', 'stars', 'trees', 'flowers'];

// ---------------------------------------------------------------------------------------------
// Colour helpers
// ---------------------------------------------------------------------------------------------

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

function css(color: Hsl, lightnessShift = 0): string {
  const h = ((color.h % 360) + 360) % 360;
  return `hsl(${h.toFixed(0)},${clamp(color.s, 0, 100).toFixed(0)}%,${clamp(color.l + lightnessShift, 2, 98).toFixed(0)}%)`;
}

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)];
}

function between(rng: Rng, min: number, max: number): number {
  return min + rng() * (max - min);
}

function n(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

interface Scene {
  width: number;
  height: number;
  palette: Hsl[];
  dark: boolean;
  motifs: Motif[];
  density: number;
  /** The hue of a water word of the prompt (`lake`, `sea`), for the water motif. */
  waterHue: number | null;
}

function wordsOf(text: string | null): string[] {
  if (!text) return [];
  return text
    .split(/\s+/)
    .map(normalizeWord)
    .filter((word) => word.length > 1);
}

function planScene(request: ImageRequest, rng: Rng): Scene {
  const words = wordsOf(request.prompt);
  const avoid = new Set(wordsOf(request.negativePrompt));
  const wanted = words.filter((word) => !avoid.has(word));

  const hues = wanted.filter((word) => word in HUE_WORDS).map((word) => HUE_WORDS[word]);
  const wordHues = wanted.map((word) => hashString(word) % 360);
  const baseHue = hues.length > 0 ? hues[0] : wordHues.length > 0 ? wordHues[Math.floor(rng() * wordHues.length)] : rng() * 360;

  const darkScore = wanted.filter((w) => DARK_WORDS.has(w)).length - wanted.filter((w) => BRIGHT_WORDS.has(w)).length;
  const dark = darkScore > 0 || (darkScore === 0 && rng() < 0.25);
  let saturation = between(rng, 50, 78);
  if (wanted.some((w) => SOFT_WORDS.has(w)) || request.style === 'natural') saturation -= 22;
  if (wanted.some((w) => VIVID_WORDS.has(w)) || request.style === 'vivid') saturation += 18;
  const lightness = dark ? between(rng, 16, 28) : between(rng, 52, 68);

  // A harmony scheme around the base hue; extra colour words pull palette entries to their hues.
  const offsets = pick(rng, [
    [0, 25, -25, 50, 180],
    [0, 180, 30, 210, -30],
    [0, 120, 240, 60, 180],
    [0, 150, 210, 20, -20],
    [0, 15, 35, 200, -15],
  ]);
  const palette = offsets.map((offset, i) => ({
    h: (i > 0 && i < hues.length ? hues[i] : baseHue + offset) + between(rng, -8, 8),
    s: clamp(saturation + between(rng, -12, 12), 8, 95),
    l: clamp(lightness + (i === 0 ? 0 : between(rng, -18, 22)), 6, 92),
  }));

  const motifs: Motif[] = [];
  for (const word of wanted) {
    const motif = MOTIF_WORDS[word];
    if (motif && !motifs.includes(motif)) motifs.push(motif);
  }
  if (motifs.length === 0) {
    // No recognised subject: two motifs chosen by the words' hashes and the seed.
    const first = FALLBACK_MOTIFS[(wordHues[0] ?? Math.floor(rng() * 360)) % FALLBACK_MOTIFS.length];
    motifs.push(first);
    const second = pick(rng, FALLBACK_MOTIFS.filter((m) => m !== first));
    motifs.push(second);
  }
  if (motifs.includes('sun') && dark && !motifs.includes('moon')) motifs[motifs.indexOf('sun')] = 'moon';

  return {
    width: request.width,
    height: request.height,
    palette,
    dark,
    motifs: motifs.slice(0, 5),
    density: clamp(wanted.length, 1, 12),
    waterHue: (() => {
      const word = wanted.find((w) => MOTIF_WORDS[w] === 'water' && w in HUE_WORDS);
      return word === undefined ? null : HUE_WORDS[word];
    })(),
  };
}

// ---------------------------------------------------------------------------------------------
// SVG layers
// ---------------------------------------------------------------------------------------------

function background(scene: Scene, rng: Rng, defs: string[]): string {
  const { width: w, height: h, palette } = scene;
  const angle = between(rng, 0, Math.PI * 2);
  const x1 = 50 + Math.cos(angle) * 50;
  const y1 = 50 + Math.sin(angle) * 50;
  defs.push(
    `<linearGradient id="bg" x1="${n(x1)}%" y1="${n(y1)}%" x2="${n(100 - x1)}%" y2="${n(100 - y1)}%">` +
      `<stop offset="0" stop-color="${css(palette[0], scene.dark ? -6 : 14)}"/>` +
      `<stop offset="${n(between(rng, 0.35, 0.65))}" stop-color="${css(palette[1])}"/>` +
      `<stop offset="1" stop-color="${css(palette[2], scene.dark ? -10 : -12)}"/></linearGradient>`,
  );
  let out = `<rect width="${w}" height="${h}" fill="url(#bg)"/>`;
  const glows = 2 + Math.floor(rng() * 3);
  for (let i = 0; i < glows; i++) {
    const color = palette[(i + 2) % palette.length];
    defs.push(
      `<radialGradient id="glow${i}"><stop offset="0" stop-color="${css(color, 12)}" stop-opacity="${between(rng, 0.45, 0.8).toFixed(2)}"/>` +
        `<stop offset="1" stop-color="${css(color)}" stop-opacity="0"/></radialGradient>`,
    );
    const r = between(rng, 0.25, 0.7) * Math.max(w, h);
    out += `<circle cx="${n(rng() * w)}" cy="${n(rng() * h)}" r="${n(r)}" fill="url(#glow${i})"/>`;
  }
  return out;
}

function celestial(scene: Scene, rng: Rng, defs: string[], moon: boolean): string {
  const { width: w, height: h } = scene;
  const r = between(rng, 0.06, 0.13) * Math.min(w, h) + 4;
  const cx = between(rng, 0.15, 0.85) * w;
  const cy = between(rng, 0.12, 0.4) * h;
  const color: Hsl = moon ? { h: 50, s: 25, l: 88 } : { h: between(rng, 30, 55), s: 95, l: 62 };
  defs.push(
    `<radialGradient id="halo"><stop offset="0" stop-color="${css(color)}" stop-opacity="0.75"/>` +
      `<stop offset="1" stop-color="${css(color)}" stop-opacity="0"/></radialGradient>`,
  );
  let out = `<circle cx="${n(cx)}" cy="${n(cy)}" r="${n(r * 3.2)}" fill="url(#halo)"/>`;
  out += `<circle cx="${n(cx)}" cy="${n(cy)}" r="${n(r)}" fill="${css(color)}"/>`;
  if (moon) {
    for (let i = 0; i < 4; i++) {
      out += `<circle cx="${n(cx + between(rng, -0.5, 0.5) * r)}" cy="${n(cy + between(rng, -0.5, 0.5) * r)}" r="${n(between(rng, 0.08, 0.2) * r)}" fill="${css(color, -12)}" opacity="0.6"/>`;
    }
  }
  return out;
}

function ridge(scene: Scene, rng: Rng, baseY: number, amplitude: number, jagged: boolean, fill: string, opacity: number): string {
  const { width: w, height: h } = scene;
  const points: string[] = [`M0 ${n(h)}`];
  const steps = jagged ? 6 + Math.floor(rng() * 8) : 48;
  const phase = rng() * Math.PI * 2;
  const freq = between(rng, 1, 3);
  for (let i = 0; i <= steps; i++) {
    const x = (i / steps) * w;
    const y = jagged
      ? baseY - (i % 2 === 0 ? between(rng, 0, 0.35) : between(rng, 0.6, 1)) * amplitude
      : baseY - (Math.sin(phase + (i / steps) * Math.PI * freq) * 0.5 + 0.5) * amplitude;
    points.push(`L${n(x)} ${n(y)}`);
  }
  points.push(`L${n(w)} ${n(h)}Z`);
  return `<path d="${points.join(' ')}" fill="${fill}" opacity="${opacity.toFixed(2)}"/>`;
}

function mountains(scene: Scene, rng: Rng): string {
  const { height: h, palette } = scene;
  let out = '';
  const layers = 3;
  for (let i = 0; i < layers; i++) {
    const color = palette[(i + 1) % palette.length];
    out += ridge(scene, rng, h * (0.55 + i * 0.12), h * (0.38 - i * 0.08), true, css(color, (scene.dark ? -4 : -10) * (i + 1)), 0.9);
  }
  return out;
}

function hills(scene: Scene, rng: Rng): string {
  const { height: h, palette } = scene;
  let out = '';
  for (let i = 0; i < 3; i++) {
    const color = palette[(i + 3) % palette.length];
    out += ridge(scene, rng, h * (0.68 + i * 0.1), h * (0.18 - i * 0.03), false, css(color, -8 * (i + 1)), 0.92);
  }
  return out;
}

function water(scene: Scene, rng: Rng): string {
  const { width: w, height: h, palette } = scene;
  const top = h * between(rng, 0.62, 0.75);
  const picked = palette[pick(rng, [1, 2, 3])];
  const base = scene.waterHue === null ? picked : { ...picked, h: scene.waterHue + between(rng, -10, 10) };
  let out = `<rect x="0" y="${n(top)}" width="${w}" height="${n(h - top)}" fill="${css(base, -14)}"/>`;
  const bands = 8 + Math.floor(rng() * 8);
  for (let i = 0; i < bands; i++) {
    const y = top + ((i + 0.5) / bands) * (h - top);
    const amp = between(rng, 2, 6) * (1 + i / bands) * (h / 512);
    const wavelength = between(rng, 0.05, 0.16) * w;
    let d = `M0 ${n(y)}`;
    for (let x = 0; x <= w; x += wavelength / 2) d += ` Q${n(x + wavelength / 4)} ${n(y + ((x / wavelength) % 1 < 0.5 ? -amp : amp))} ${n(x + wavelength / 2)} ${n(y)}`;
    out += `<path d="${d}" fill="none" stroke="${css(base, 18 + i)}" stroke-width="${n(Math.max(1, (h / 400) * (1 + i / 4)))}" opacity="${between(rng, 0.25, 0.6).toFixed(2)}"/>`;
  }
  return out;
}

function city(scene: Scene, rng: Rng): string {
  const { width: w, height: h, palette } = scene;
  let out = '';
  let x = 0;
  const ground = h * between(rng, 0.78, 0.9);
  const body = css(palette[4], scene.dark ? -14 : -30);
  const lit = scene.dark ? 'hsl(48,90%,70%)' : css(palette[0], 30);
  while (x < w) {
    const bw = between(rng, 0.04, 0.1) * w;
    const bh = between(rng, 0.12, 0.45) * h;
    out += `<rect x="${n(x)}" y="${n(ground - bh)}" width="${n(bw + 1)}" height="${n(bh + (h - ground))}" fill="${body}"/>`;
    const cell = Math.max(4, bw / 5);
    for (let wy = ground - bh + cell; wy < ground - cell; wy += cell * 1.6) {
      for (let wx = x + cell * 0.6; wx < x + bw - cell; wx += cell * 1.4) {
        if (rng() < 0.45) out += `<rect x="${n(wx)}" y="${n(wy)}" width="${n(cell * 0.6)}" height="${n(cell * 0.8)}" fill="${lit}" opacity="0.85"/>`;
      }
    }
    x += bw + between(rng, 0, 0.015) * w;
  }
  return out;
}

function trees(scene: Scene, rng: Rng): string {
  const { width: w, height: h, palette } = scene;
  let out = '';
  const count = 8 + Math.floor(rng() * 10) + scene.density;
  const green: Hsl = { h: (palette[0].h + 120) / 2 + 30, s: 40, l: scene.dark ? 14 : 28 };
  for (let i = 0; i < count; i++) {
    const tx = rng() * w;
    const ground = h * between(rng, 0.8, 1.02);
    const th = between(rng, 0.12, 0.3) * h;
    const tw = th * between(rng, 0.3, 0.45);
    out += `<path d="M${n(tx)} ${n(ground - th)} L${n(tx + tw / 2)} ${n(ground)} L${n(tx - tw / 2)} ${n(ground)}Z" fill="${css(green, between(rng, -6, 10))}"/>`;
  }
  return out;
}

function stars(scene: Scene, rng: Rng): string {
  const { width: w, height: h } = scene;
  let out = '';
  const count = Math.round(((w * h) / 4000) * between(rng, 0.6, 1.2)) + 20;
  for (let i = 0; i < Math.min(count, 900); i++) {
    out += `<circle cx="${n(rng() * w)}" cy="${n(Math.pow(rng(), 1.4) * h * 0.75)}" r="${n(between(rng, 0.4, 1.8) * Math.max(1, w / 1024))}" fill="hsl(50,60%,95%)" opacity="${between(rng, 0.35, 1).toFixed(2)}"/>`;
  }
  return out;
}

function flowers(scene: Scene, rng: Rng): string {
  const { width: w, height: h, palette } = scene;
  let out = '';
  const count = 10 + Math.floor(rng() * 14) + scene.density;
  for (let i = 0; i < count; i++) {
    const cx = rng() * w;
    const cy = h * between(rng, 0.7, 0.98);
    const r = between(rng, 0.008, 0.025) * Math.max(w, h);
    const color = css(palette[Math.floor(rng() * palette.length)], 10);
    const petals = 5 + Math.floor(rng() * 3);
    for (let p = 0; p < petals; p++) {
      const a = (p / petals) * Math.PI * 2;
      out += `<circle cx="${n(cx + Math.cos(a) * r)}" cy="${n(cy + Math.sin(a) * r)}" r="${n(r * 0.75)}" fill="${color}" opacity="0.9"/>`;
    }
    out += `<circle cx="${n(cx)}" cy="${n(cy)}" r="${n(r * 0.55)}" fill="hsl(48,90%,60%)"/>`;
  }
  return out;
}

function rain(scene: Scene, rng: Rng): string {
  const { width: w, height: h } = scene;
  let out = '';
  const slant = between(rng, -0.3, 0.1);
  const count = Math.min(600, Math.round((w * h) / 3000));
  for (let i = 0; i < count; i++) {
    const x = rng() * w;
    const y = rng() * h;
    const len = between(rng, 0.02, 0.05) * h;
    out += `<line x1="${n(x)}" y1="${n(y)}" x2="${n(x + slant * len)}" y2="${n(y + len)}" stroke="hsl(205,30%,85%)" stroke-width="${n(Math.max(1, w / 1200))}" opacity="${between(rng, 0.2, 0.5).toFixed(2)}"/>`;
  }
  return out;
}

function snow(scene: Scene, rng: Rng): string {
  const { width: w, height: h } = scene;
  let out = `<rect x="0" y="${n(h * 0.9)}" width="${w}" height="${n(h * 0.1)}" fill="hsl(210,30%,94%)" opacity="0.8"/>`;
  const count = Math.min(700, Math.round((w * h) / 2500));
  for (let i = 0; i < count; i++) {
    out += `<circle cx="${n(rng() * w)}" cy="${n(rng() * h)}" r="${n(between(rng, 0.8, 3) * Math.max(1, w / 1024))}" fill="white" opacity="${between(rng, 0.5, 0.95).toFixed(2)}"/>`;
  }
  return out;
}

function abstract(scene: Scene, rng: Rng): string {
  const { width: w, height: h, palette } = scene;
  let out = '';
  const count = 6 + scene.density * 2 + Math.floor(rng() * 8);
  for (let i = 0; i < count; i++) {
    const color = css(palette[Math.floor(rng() * palette.length)], between(rng, -15, 15));
    const cx = rng() * w;
    const cy = rng() * h;
    const size = between(rng, 0.04, 0.22) * Math.max(w, h);
    const opacity = between(rng, 0.25, 0.75).toFixed(2);
    const rotate = `rotate(${n(rng() * 360)} ${n(cx)} ${n(cy)})`;
    switch (Math.floor(rng() * 4)) {
      case 0:
        out += `<circle cx="${n(cx)}" cy="${n(cy)}" r="${n(size / 2)}" fill="${color}" opacity="${opacity}"/>`;
        break;
      case 1:
        out += `<rect x="${n(cx - size / 2)}" y="${n(cy - size / 3)}" width="${n(size)}" height="${n(size / 1.5)}" rx="${n(size * 0.08)}" fill="${color}" opacity="${opacity}" transform="${rotate}"/>`;
        break;
      case 2:
        out += `<path d="M${n(cx)} ${n(cy - size / 2)} L${n(cx + size / 2)} ${n(cy + size / 2)} L${n(cx - size / 2)} ${n(cy + size / 2)}Z" fill="${color}" opacity="${opacity}" transform="${rotate}"/>`;
        break;
      default:
        out += `<circle cx="${n(cx)}" cy="${n(cy)}" r="${n(size / 2)}" fill="none" stroke="${color}" stroke-width="${n(Math.max(2, size * 0.06))}" opacity="${opacity}"/>`;
    }
  }
  return out;
}

/** The order motifs are painted in: sky things first, then land, then weather in front. */
const MOTIF_ORDER: Motif[] = ['stars', 'sun', 'moon', 'abstract', 'mountains', 'hills', 'water', 'city', 'trees', 'flowers', 'rain', 'snow'];

export function composeSvg(request: ImageRequest): string {
  const rng = seededRng(hashString(`${request.prompt.trim().toLowerCase()}\u0000${request.style ?? ''}\u0000${request.negativePrompt ?? ''}`, seedOf(request.seed)));
  const scene = planScene(request, rng);
  const defs: string[] = [];
  let body = background(scene, rng, defs);
  for (const motif of MOTIF_ORDER) {
    if (!scene.motifs.includes(motif)) continue;
    switch (motif) {
      case 'sun':
        body += celestial(scene, rng, defs, false);
        break;
      case 'moon':
        body += celestial(scene, rng, defs, true);
        break;
      case 'mountains':
        body += mountains(scene, rng);
        break;
      case 'hills':
        body += hills(scene, rng);
        break;
      case 'water':
        body += water(scene, rng);
        break;
      case 'city':
        body += city(scene, rng);
        break;
      case 'trees':
        body += trees(scene, rng);
        break;
      case 'stars':
        body += stars(scene, rng);
        break;
      case 'flowers':
        body += flowers(scene, rng);
        break;
      case 'rain':
        body += rain(scene, rng);
        break;
      case 'snow':
        body += snow(scene, rng);
        break;
      case 'abstract':
        body += abstract(scene, rng);
        break;
    }
  }
  defs.push(
    `<radialGradient id="vignette" r="75%"><stop offset="0.55" stop-color="black" stop-opacity="0"/>` +
      `<stop offset="1" stop-color="black" stop-opacity="${scene.dark ? '0.55' : '0.3'}"/></radialGradient>`,
  );
  body += `<rect width="${scene.width}" height="${scene.height}" fill="url(#vignette)"/>`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${scene.width}" height="${scene.height}" viewBox="0 0 ${scene.width} ${scene.height}">` +
    `<defs>${defs.join('')}</defs>${body}</svg>`
  );
}

/** Any number (negative, fractional, huge) → a 32-bit hash seed. */
function seedOf(seed: number): number {
  return Number.isSafeInteger(seed) && seed >= 0 && seed <= 0xffffffff ? seed : hashString(String(seed)) >>> 0;
}

/**
 * Octaves of value noise (random grids upscaled with a cubic kernel), as grey layers centred on
 * mid-grey, for a soft-light blend: texture without changing the overall colours.
 */
async function noiseLayers(width: number, height: number, rng: Rng): Promise<sharp.OverlayOptions[]> {
  const layers: sharp.OverlayOptions[] = [];
  const octaves: Array<[cells: number, amplitude: number]> = [
    [5, 70],
    [18, 40],
    [Math.max(24, Math.round(Math.max(width, height) / 10)), 22],
  ];
  for (const [cells, amplitude] of octaves) {
    const gw = Math.max(2, Math.round((cells * width) / Math.max(width, height)));
    const gh = Math.max(2, Math.round((cells * height) / Math.max(width, height)));
    const grid = Buffer.alloc(gw * gh);
    for (let i = 0; i < grid.length; i++) grid[i] = Math.round(128 + (rng() * 2 - 1) * amplitude);
    const layer = await sharp(grid, { raw: { width: gw, height: gh, channels: 1 } })
      .resize(width, height, { kernel: 'cubic', fit: 'fill' })
      .toColourspace('srgb')
      .png({ compressionLevel: 0 })
      .toBuffer();
    layers.push({ input: layer, blend: 'soft-light' });
  }
  return layers;
}

function validate(request: ImageRequest): void {
  for (const [name, value] of [
    ['width', request.width],
    ['height', request.height],
  ] as const) {
    if (!Number.isInteger(value) || value < MIN_IMAGE_SIDE || value > MAX_IMAGE_SIDE) {
      throw new ProviderError('bad_request', `${name} must be an integer from ${MIN_IMAGE_SIDE} to ${MAX_IMAGE_SIDE}, got ${value}`);
    }
  }
  if (!(request.format in IMAGE_FORMATS)) throw new ProviderError('bad_request', `unsupported image format ${String(request.format)}`);
}

/** Draws the picture as a sharp pipeline (RGB, no alpha, exactly width×height), not yet encoded. */
export async function drawPicture(request: ImageRequest, signal: AbortSignal): Promise<sharp.Sharp> {
  validate(request);
  const { width, height } = request;
  const svg = composeSvg(request);
  const noiseRng = seededRng(hashString(`noise\u0000${request.prompt}`, seedOf(request.seed)));
  const layers = await noiseLayers(width, height, noiseRng);
  if (signal.aborted) throw abortError(signal);
  const art = sharp(Buffer.from(svg), { density: 72 }).resize(width, height, { fit: 'fill' }).composite(layers).removeAlpha();
  if (!request.inputImage) return art;

  let base: Buffer;
  try {
    base = await sharp(request.inputImage).rotate().resize(width, height, { fit: 'cover' }).removeAlpha().png({ compressionLevel: 0 }).toBuffer();
  } catch (error) {
    throw new ProviderError('bad_request', `the input image could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
  const overlay = await art.png({ compressionLevel: 0 }).toBuffer();
  const translucent = await sharp(overlay).removeAlpha().ensureAlpha(0.5).png({ compressionLevel: 0 }).toBuffer();
  if (signal.aborted) throw abortError(signal);
  return sharp(base).composite([
    { input: overlay, blend: 'soft-light' },
    { input: translucent, blend: 'over' },
  ]);
}

export class LocalImageProvider implements ImageProvider {
  async generate(request: ImageRequest, options: CallOptions): Promise<ImageResult> {
    if (options.signal.aborted) throw abortError(options.signal);
    const picture = await drawPicture(request, options.signal);
    options.onProgress?.(60);
    const { data, info } = await encodeImage(picture, request.format, request.quality).toBuffer({ resolveWithObject: true });
    if (options.signal.aborted) throw abortError(options.signal);
    options.onProgress?.(100);
    const file: FileOutput = { bytes: data, ...IMAGE_FORMATS[request.format] };
    return { file, width: info.width, height: info.height, seed: request.seed };
  }
}
