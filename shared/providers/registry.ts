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

  /** True when the provider is configured and has the capability the category needs. */
  canServe(name: string, category: Category): boolean {
    const adapter = this.adapters.get(name);
    return adapter !== undefined && adapter[capabilityFor(category)] !== undefined;
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
