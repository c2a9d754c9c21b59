/**
 * Finding the Debian audio engines the local providers use, once per process:
 * - `pocketsphinx_batch` (package `pocketsphinx`, the 0.8/5prealpha CLI of Debian 12) and its US
 *   English model (package `pocketsphinx-en-us`: `/usr/share/pocketsphinx/model/en-us`);
 * - `fluidsynth` and a General-MIDI sound font (`timgm6mb-soundfont`, or `fluid-soundfont-gm`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { findOnPath } from '../../media/executables';

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function isDir(dir: string): boolean {
  try {
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

export interface PocketsphinxModel {
  /** The acoustic model directory (`-hmm`). */
  hmm: string;
  /** The language model (`-lm`). */
  lm: string;
  /** The pronunciation dictionary (`-dict`). */
  dict: string;
}

export const POCKETSPHINX_MODEL_DIRS = ['/usr/share/pocketsphinx/model/en-us', '/usr/local/share/pocketsphinx/model/en-us'];

/** The US English model inside `dir` (Debian's layout: en-us/, en-us.lm.bin, cmudict-en-us.dict), or null. */
export function pocketsphinxModelIn(dir: string): PocketsphinxModel | null {
  const hmm = path.join(dir, 'en-us');
  const lm = [path.join(dir, 'en-us.lm.bin'), path.join(dir, 'en-us.lm')].find(isFile);
  const dict = [path.join(dir, 'cmudict-en-us.dict'), path.join(dir, 'en-us.dict')].find(isFile);
  if (!isDir(hmm) || !isFile(path.join(hmm, 'mdef')) || !lm || !dict) return null;
  return { hmm, lm, dict };
}

let cachedPocketsphinx: string | null | undefined;
let cachedModel: PocketsphinxModel | null | undefined;

/** `pocketsphinx_batch` on PATH, or null. */
export function findPocketsphinx(): string | null {
  if (cachedPocketsphinx === undefined) cachedPocketsphinx = findOnPath('pocketsphinx_batch');
  return cachedPocketsphinx;
}

/** The US English model in one of POCKETSPHINX_MODEL_DIRS, or null. */
export function findPocketsphinxModel(): PocketsphinxModel | null {
  if (cachedModel === undefined) {
    cachedModel = null;
    for (const dir of POCKETSPHINX_MODEL_DIRS) {
      const model = pocketsphinxModelIn(dir);
      if (model) {
        cachedModel = model;
        break;
      }
    }
  }
  return cachedModel;
}

let cachedFluidsynth: string | null | undefined;
let cachedSoundfont: string | null | undefined;

/** `fluidsynth` on PATH, or null. */
export function findFluidsynth(): string | null {
  if (cachedFluidsynth === undefined) cachedFluidsynth = findOnPath('fluidsynth');
  return cachedFluidsynth;
}

/**
 * The General-MIDI sound font: TimGM6mb first (what the documented apt line installs, so every
 * machine renders the same), then FluidR3, the system default, any other .sf2 in the usual places.
 */
export const SOUNDFONT_CANDIDATES = [
  '/usr/share/sounds/sf2/TimGM6mb.sf2',
  '/usr/share/sounds/sf2/FluidR3_GM.sf2',
  '/usr/share/sounds/sf2/default-GM.sf2',
  '/usr/share/soundfonts/default.sf2',
  '/usr/share/soundfonts/FluidR3_GM.sf2',
];

export function findSoundfont(): string | null {
  if (cachedSoundfont !== undefined) return cachedSoundfont;
  cachedSoundfont = SOUNDFONT_CANDIDATES.find(isFile) ?? null;
  if (!cachedSoundfont) {
    for (const dir of ['/usr/share/sounds/sf2', '/usr/share/soundfonts']) {
      try {
        const any = fs.readdirSync(dir).filter((name) => name.toLowerCase().endsWith('.sf2')).sort()[0];
        if (any && isFile(path.join(dir, any))) {
          cachedSoundfont = path.join(dir, any);
          break;
        }
      } catch {
        // no such directory
      }
    }
  }
  return cachedSoundfont;
}
