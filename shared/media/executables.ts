/**
 * Finding the external programs the media code runs, once per process: any executable on PATH
 * (the local audio engines look up pocketsphinx and fluidsynth with it), and ffmpeg: the system
 * `ffmpeg` when `ffmpeg -version` runs, else the static binary inside the npm package
 * `@ffmpeg-installer/ffmpeg`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** An executable `name` on PATH as an absolute path, or null. */
export function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

let cachedFfmpeg: string | null | undefined;

function runs(command: string): boolean {
  const result = spawnSync(command, ['-hide_banner', '-version'], { stdio: 'ignore', timeout: 15_000 });
  return result.error === undefined && result.status === 0;
}

function installerBinary(): string | null {
  try {
    // Required lazily: the package throws (a string) on a platform it has no binary for.
    const installer = require('@ffmpeg-installer/ffmpeg') as typeof import('@ffmpeg-installer/ffmpeg');
    return typeof installer.path === 'string' ? installer.path : null;
  } catch {
    return null;
  }
}

/**
 * The ffmpeg to run: the system one when `ffmpeg -version` works (as an absolute path, for
 * reporting; the bare name if it cannot be placed on PATH), else the binary of the npm package
 * `@ffmpeg-installer/ffmpeg` when it runs, else null. Looked up once per process.
 */
export function findFfmpeg(): string | null {
  if (cachedFfmpeg !== undefined) return cachedFfmpeg;
  if (runs('ffmpeg')) {
    cachedFfmpeg = findOnPath('ffmpeg') ?? 'ffmpeg';
  } else {
    const bundled = installerBinary();
    cachedFfmpeg = bundled !== null && runs(bundled) ? bundled : null;
  }
  return cachedFfmpeg;
}
