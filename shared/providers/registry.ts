import type { Category } from '../catalog/types';
import { ProviderError, ProviderAdapter } from './types';

/** The adapters configured in this process, by provider name. */
export class ProviderRegistry {
  private readonly adapters = new Map<string, ProviderAdapter>();

  constructor(adapters: ProviderAdapter[]) {
    for (const adapter of adapters) this.adapters.set(adapter.name, adapter);
  }

  has(name: string): boolean {
    return this.adapters.has(name);
  }

  /** True when the provider is configured, has the capability the category needs, and serves the model. */
  canServe(name: string, category: Category, upstreamModel?: string): boolean {
    const adapter = this.adapters.get(name);
    if (adapter === undefined || adapter[capabilityFor(category)] === undefined) return false;
    return upstreamModel === undefined || adapter.serves === undefined || adapter.serves(upstreamModel);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.adapters.values()].map((a) => a.close?.()));
  }

  names(): string[] {
    return [...this.adapters.keys()];
  }

  get(name: string): ProviderAdapter {
    const adapter = this.adapters.get(name);
    if (!adapter) throw new ProviderError('unavailable', `provider ${name} is not configured`);
    return adapter;
  }
}

const capabilityOf: Record<Category, keyof Omit<ProviderAdapter, 'name'>> = {
  text: 'text',
  image: 'image',
  video: 'video',
  tts: 'speech',
  stt: 'transcription',
  music: 'music',
  tool: 'tool',
};

export function capabilityFor(category: Category): keyof Omit<ProviderAdapter, 'name'> {
  return capabilityOf[category];
}
