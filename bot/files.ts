/**
 * Files people send: downloaded through the Bot API (getFile, then /file/bot<token>/<path>) and
 * kept as uploads, handed to the pipeline as this service's own URLs (read from storage, never
 * fetched). Telegram does not let a bot download more than 20 MB, so larger files are refused
 * before trying.
 */
import type { Api } from 'grammy';
import type { Container } from '../shared/container';
import { TELEGRAM_DOWNLOAD_LIMIT } from '../shared/telegram/delivery';

const DOWNLOAD_TIMEOUT_MS = 60_000;
export const DOWNLOAD_LIMIT_MB = Math.round(TELEGRAM_DOWNLOAD_LIMIT / (1024 * 1024));

export class FileTooBigError extends Error {
  constructor() {
    super(`files over ${DOWNLOAD_LIMIT_MB} MB cannot be downloaded by a bot`);
  }
}

/** Whether Telegram said (in the update) that the file is over the download limit. */
export function overDownloadLimit(fileSize: number | undefined): boolean {
  return (fileSize ?? 0) > TELEGRAM_DOWNLOAD_LIMIT;
}

export async function downloadFile(api: Api, container: Pick<Container, 'config'>, fileId: string): Promise<Buffer> {
  const { botToken, apiRoot } = container.config.telegram;
  const file = await api.getFile(fileId);
  if (overDownloadLimit(file.file_size)) throw new FileTooBigError();
  if (!file.file_path) throw new Error('Telegram gave no path for the file');
  const response = await fetch(`${apiRoot}/file/bot${botToken ?? ''}/${file.file_path}`, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
  if (!response.ok) throw new Error(`downloading a file from Telegram answered ${response.status}`);
  const bytes = Buffer.from(await response.arrayBuffer());
  if (bytes.length > TELEGRAM_DOWNLOAD_LIMIT) throw new FileTooBigError();
  return bytes;
}

const EXTENSIONS: Record<string, string> = {
  'audio/ogg': 'ogg',
  'audio/opus': 'ogg',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/mp4': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/m4a': 'm4a',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
};

export function extensionOf(mimeType: string | undefined, fallback: string): string {
  return (mimeType && EXTENSIONS[mimeType.toLowerCase()]) ?? fallback;
}

/** Keeps the bytes as an upload; the URL names this service's own file. */
export async function storeUpload(container: Pick<Container, 'storage' | 'config'>, bytes: Buffer, contentType: string, extension: string): Promise<string> {
  const stored = await container.storage.put('uploads', bytes, contentType, extension);
  return `${container.config.publicBaseUrl}/files/${stored.key}`;
}
