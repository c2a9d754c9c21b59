/** The local-disk file store: what `put` writes is what `read` returns, under unguessable keys. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isValidKey, LocalDiskStorage } from '../shared/storage';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-storage-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

it('stores bytes under a fresh random key and reads them back whole or by range', async () => {
  const storage = new LocalDiskStorage(root);
  const a = await storage.put('results', Buffer.from('hello world'), 'image/png', 'PNG');
  const b = await storage.put('results', Buffer.from('hello world'), 'image/png', 'png');
  expect(a.key).not.toBe(b.key);
  expect(isValidKey(a.key)).toBe(true);
  expect(a).toMatchObject({ size: 11, contentType: 'image/png' });
  expect((await storage.readAll(a.key)).toString()).toBe('hello world');
  const chunks: Buffer[] = [];
  for await (const chunk of storage.read(a.key, { start: 6, end: 10 })) chunks.push(chunk as Buffer);
  expect(Buffer.concat(chunks).toString()).toBe('world');
  // Nothing but the two files: no temporary names left behind.
  const month = path.dirname(path.join(root, a.key));
  expect(fs.readdirSync(month).sort()).toEqual([path.basename(a.key), path.basename(b.key)].sort());
});

it('makes the directory again if it was removed after the first file', async () => {
  const storage = new LocalDiskStorage(root);
  const first = await storage.put('results', Buffer.from('one'), 'text/plain', 'txt');
  fs.rmSync(path.join(root, 'results'), { recursive: true, force: true });
  const second = await storage.put('results', Buffer.from('two'), 'text/plain', 'txt');
  expect((await storage.readAll(second.key)).toString()).toBe('two');
  expect(await storage.stat(first.key)).toBeNull();
  await storage.delete(second.key);
  expect(await storage.stat(second.key)).toBeNull();
});

it('writes large and empty files whole', async () => {
  const storage = new LocalDiskStorage(root);
  const big = Buffer.alloc(5 * 1024 * 1024 + 3);
  for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
  const stored = await storage.put('results', big, 'video/mp4', 'mp4');
  expect((await storage.readAll(stored.key)).equals(big)).toBe(true);
  const empty = await storage.put('results', Buffer.alloc(0), 'text/plain', 'txt');
  expect(await storage.stat(empty.key)).toEqual({ size: 0, contentType: 'text/plain; charset=utf-8' });
});
