/**
 * Reads the media a request points at: our own result URLs straight from storage (never
 * fetched), anything else (http(s), `data:`) through the URL fetcher under the URL-input rules
 * of decisions.md. `check` runs the same rules at acceptance, so a refused URL is a 422 and is
 * never fetched.
 */
import { AppError } from '../errors';
import { UrlFetcher, UrlFetchError, UrlRefusedError } from '../net/url-fetch';
import { ProviderError } from '../providers/types';
import type { Storage } from '../storage';
import { isValidKey } from '../storage';
import type { InputFetcher } from './types';

export const MAX_INPUT_BYTES = 25 * 1024 * 1024;

export class MediaInputs implements InputFetcher {
  private readonly ownPrefix: string;
  private readonly fetcher: UrlFetcher;

  constructor(
    publicBaseUrl: string,
    private readonly storage: Storage,
    allow: string[],
    fetcher?: UrlFetcher,
  ) {
    this.ownPrefix = `${publicBaseUrl}/files/`;
    this.fetcher = fetcher ?? new UrlFetcher({ allow, maxBytes: MAX_INPUT_BYTES });
  }

  private ownKey(url: string): string | null {
    if (!url.startsWith(this.ownPrefix)) return null;
    const key = url.slice(this.ownPrefix.length);
    return isValidKey(key) && !key.startsWith('inputs/') ? key : '';
  }

  /** Refuses (422 naming `field`) a URL the fetcher would refuse, without fetching it. */
  async check(url: string, field: string): Promise<void> {
    const own = this.ownKey(url);
    if (own !== null) {
      if (own === '' || !(await this.storage.stat(own))) throw AppError.validation(field, 'names a file of this service that does not exist');
      return;
    }
    try {
      await this.fetcher.check(url);
    } catch (error) {
      if (error instanceof UrlRefusedError) throw AppError.validation(field, `cannot be fetched: ${error.reason}`);
      if (error instanceof UrlFetchError) throw AppError.validation(field, `cannot be fetched: ${error.message}`);
      throw error;
    }
  }

  /**
   * Fetches a user's URL at acceptance and keeps the bytes as an upload, returning this service's
   * own URL for them: every refusal or failure of the fetch (a redirect to a private address, a
   * 404, a timeout, too large) is then a 422 before anything is held or charged. Own URLs are
   * only checked.
   */
  async intake(url: string, field: string): Promise<string> {
    if (this.ownKey(url) !== null) {
      await this.check(url, field);
      return url;
    }
    let fetched: { bytes: Buffer; contentType: string | null };
    try {
      fetched = await this.fetcher.fetch(url);
    } catch (error) {
      if (error instanceof UrlRefusedError) throw AppError.validation(field, `cannot be fetched: ${error.reason}`);
      if (error instanceof UrlFetchError) throw AppError.validation(field, `could not be fetched: ${error.message}`);
      throw error;
    }
    if (fetched.bytes.length === 0) throw AppError.validation(field, 'points at an empty file');
    const stored = await this.storage.put('uploads', fetched.bytes, fetched.contentType ?? 'application/octet-stream', 'bin');
    return `${this.ownPrefix}${stored.key}`;
  }

  async fetch(url: string, signal: AbortSignal): Promise<Buffer> {
    const own = this.ownKey(url);
    if (own !== null) {
      if (own === '' || !(await this.storage.stat(own))) throw new ProviderError('bad_request', 'The input file no longer exists');
      return this.storage.readAll(own);
    }
    try {
      return (await this.fetcher.fetch(url, signal)).bytes;
    } catch (error) {
      if (error instanceof UrlRefusedError) throw new ProviderError('bad_request', `The input URL was refused: ${error.reason}`);
      if (error instanceof UrlFetchError) throw new ProviderError('bad_request', `The input URL could not be fetched: ${error.message}`);
      throw error;
    }
  }
}
