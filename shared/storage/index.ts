/**
 * Where generated files live. The local-disk store keeps them under DATA_DIR/files; keys carry
 * 128 random bits, so a file's URL cannot be guessed. (An S3-compatible store comes with
 * scale-out; it implements the same interface.)
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';

export interface StoredFile {
  key: string;
  size: number;
  contentType: string;
}

export interface FileStat {
  size: number;
  contentType: string;
}

export interface Storage {
  put(prefix: string, bytes: Buffer, contentType: string, extension: string): Promise<StoredFile>;
  stat(key: string): Promise<FileStat | null>;
  /** A byte range [start, end] inclusive, or the whole file. */
  read(key: string, range?: { start: number; end: number }): Readable;
  readAll(key: string): Promise<Buffer>;
  delete(key: string): Promise<void>;
}

const CONTENT_TYPES: Record<string, string> = {
  webp: 'image/webp',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  mp4: 'video/mp4',
  webm: 'video/webm',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  flac: 'audio/flac',
  m4a: 'audio/mp4',
  txt: 'text/plain; charset=utf-8',
  json: 'application/json',
};

export function contentTypeOf(key: string): string {
  const ext = path.extname(key).slice(1).toLowerCase();
  return CONTENT_TYPES[ext] ?? 'application/octet-stream';
}

/** Keys look like `results/2026/11/<32 hex>.webp`: safe to join to a directory. */
export function isValidKey(key: string): boolean {
  return /^[a-z]+\/[0-9]{4}\/[0-9]{2}\/[0-9a-f]{32}\.[a-z0-9]{2,5}$/.test(key);
}

/**
 * Creates `file` (never overwriting) with `bytes`: open, write until all is written, close, with
 * callbacks. fs/promises' writeFile costs several times the main-thread time per file (a
 * FileHandle object, its own promise chain), and every result of every generation passes here.
 */
function writeNewFile(file: string, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    fs.open(file, 'wx', (openError, fd) => {
      if (openError) return reject(openError);
      const finish = (error: Error | null): void => {
        fs.close(fd, (closeError) => {
          const failure = error ?? closeError;
          if (failure) reject(failure);
          else resolve();
        });
      };
      const writeFrom = (offset: number): void => {
        if (offset >= bytes.length) return finish(null);
        fs.write(fd, bytes, offset, bytes.length - offset, null, (writeError, written) => {
          if (writeError) finish(writeError);
          else writeFrom(offset + written);
        });
      };
      writeFrom(0);
    });
  });
}

export class LocalDiskStorage implements Storage {
  /** Directories this process has made (or found): a month's directory is made once, not per file. */
  private readonly directories = new Set<string>();

  constructor(private readonly root: string) {
    fs.mkdirSync(root, { recursive: true });
  }

  private pathOf(key: string): string {
    if (!isValidKey(key)) throw new Error(`invalid storage key ${key}`);
    return path.join(this.root, key);
  }

  async put(prefix: string, bytes: Buffer, _contentType: string, extension: string): Promise<StoredFile> {
    const now = new Date();
    const key = `${prefix}/${now.getUTCFullYear()}/${String(now.getUTCMonth() + 1).padStart(2, '0')}/${crypto.randomBytes(16).toString('hex')}.${extension.toLowerCase()}`;
    const file = this.pathOf(key);
    const directory = path.dirname(file);
    if (!this.directories.has(directory)) {
      await fsp.mkdir(directory, { recursive: true });
      this.directories.add(directory);
    }
    // Written in place: nobody can ask for the file before `put` returns, since its random key
    // reaches a reader only through the row that records it afterwards. `wx` never overwrites.
    try {
      await writeNewFile(file, bytes);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // The directory went away under us (an operator cleaned up): make it again.
      await fsp.mkdir(directory, { recursive: true });
      await writeNewFile(file, bytes);
    }
    return { key, size: bytes.length, contentType: contentTypeOf(key) };
  }

  async stat(key: string): Promise<FileStat | null> {
    if (!isValidKey(key)) return null;
    try {
      const stats = await fsp.stat(this.pathOf(key));
      return { size: stats.size, contentType: contentTypeOf(key) };
    } catch {
      return null;
    }
  }

  read(key: string, range?: { start: number; end: number }): Readable {
    return fs.createReadStream(this.pathOf(key), range ? { start: range.start, end: range.end } : {});
  }

  readAll(key: string): Promise<Buffer> {
    return fsp.readFile(this.pathOf(key));
  }

  async delete(key: string): Promise<void> {
    if (!isValidKey(key)) return;
    await fsp.rm(this.pathOf(key), { force: true });
  }
}
