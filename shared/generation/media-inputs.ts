/**
 * Reads the media a request points at: our own result URLs straight from storage, `data:` URLs
 * decoded, anything else fetched under the URL-input rules (decisions.md "URL inputs").
 */
import type { Storage } from '../storage';
import { isValidKey } from '../storage';
import { ProviderError } from '../providers/types';
import type { InputFetcher } from './execute';

export const MAX_INPUT_BYTES = 25 * 1024 * 1024;

export class MediaInputs implements InputFetcher {
  private readonly ownPrefix: string;

  constructor(
    publicBaseUrl: string,
    private readonly storage: Storage,
    private readonly allow: string[],
  ) {
    this.ownPrefix = `${publicBaseUrl}/files/`;
  }

  async fetch(url: string, _signal: AbortSignal): Promise<Buffer> {
    if (url.startsWith(this.ownPrefix)) {
      const key = url.slice(this.ownPrefix.length);
      if (!isValidKey(key) || !(await this.storage.stat(key))) throw new ProviderError('bad_request', 'The input file no longer exists');
      return this.storage.readAll(key);
    }
    const data = /^data:([^,]*?)(;base64)?,(.*)$/s.exec(url);
    if (data) {
      const bytes = data[2] ? Buffer.from(data[3] ?? '', 'base64') : Buffer.from(decodeURIComponent(data[3] ?? ''), 'utf8');
      if (bytes.length > MAX_INPUT_BYTES) throw new ProviderError('bad_request', 'The input file is too large');
      return bytes;
    }
    throw new ProviderError('bad_request', `Fetching input URLs is not available yet (${this.allow.length} allowed hosts)`);
  }
}
