/**
 * The account's default image size (settings' `default_image_size`): the sizes the catalog's
 * image models offer, for the settings' choice, and the playground's starting size, which is the
 * account's when the model offers it (as the API does for a request that names no size).
 */
import type { RawParams } from './components/param-form';
import type { Model } from './types';

function sizeValues(model: Pick<Model, 'category' | 'params'>): string[] {
  const spec = model.params.size;
  return model.category === 'image' && spec?.type === 'enum' ? spec.values : [];
}

function pixels(size: string): [number, number] {
  const [w = 0, h = 0] = size.split('x').map(Number);
  return [w, h];
}

/** Every size an image model of the catalog offers, smallest first (squares before their wide and tall kin). */
export function offeredImageSizes(models: Array<Pick<Model, 'category' | 'params'>>): string[] {
  const sizes = new Set(models.flatMap(sizeValues));
  return [...sizes].sort((a, b) => {
    const [aw, ah] = pixels(a);
    const [bw, bh] = pixels(b);
    return aw * ah - bw * bh || Math.abs(aw - ah) - Math.abs(bw - bh) || bw - aw;
  });
}

export type ImageShape = 'square' | 'landscape' | 'portrait';

export function shapeOf(size: string): ImageShape {
  const [w, h] = pixels(size);
  return w === h ? 'square' : w > h ? 'landscape' : 'portrait';
}

/** The form's starting values with the account's size in place of the model's default, when the model offers it. */
export function withAccountSize(raw: RawParams, model: Pick<Model, 'category' | 'params'>, size: string | null): RawParams {
  return size && sizeValues(model).includes(size) ? { ...raw, size } : raw;
}
