/**
 * The buttons under a result: Again (the same request, a new generation, its price on the
 * button), Change prompt (the dialog again with the same model and options), and for pictures
 * the related tools that run on the result (upscale, remove the background). The worker puts
 * them there, the bot answers them; their data names the generation by id (well under
 * Telegram's 64 bytes), and the bot acts only for the generation's owner.
 */
import { InlineKeyboard } from 'grammy';
import type { Catalog, CatalogModel } from '../catalog';
import type { Generation } from '../db/entities';
import type { Plan } from '../plans';
import { modelsFor } from './chat-turn';
import type { ResultTexts } from './result-texts';
import type { Texts } from './texts';

/** Tools offered on a picture, by the engine name (`upstream_model`) of their catalog models. */
export const RELATED_IMAGE_TOOLS = ['upscale-esrgan', 'remove-bg'] as const;
export type RelatedTool = (typeof RELATED_IMAGE_TOOLS)[number];

/** Categories a dialog makes (so Change prompt can open it again), with the dialog's name. */
export const DIALOG_OF_CATEGORY: Partial<Record<string, 'image' | 'video' | 'music' | 'voice'>> = { image: 'image', video: 'video', music: 'music', tts: 'voice' };

export type ResultButton = { action: 'again'; id: number } | { action: 'prompt'; id: number } | { action: 'tool'; tool: RelatedTool; id: number };

export const RESULT_BUTTON_PATTERN = /^res:(a|p|t):(?:([a-z-]+):)?(\d{1,12})$/;

export function parseResultButton(data: string): ResultButton | null {
  const match = RESULT_BUTTON_PATTERN.exec(data);
  if (!match) return null;
  const id = Number(match[3]);
  if (match[1] === 'a' && !match[2]) return { action: 'again', id };
  if (match[1] === 'p' && !match[2]) return { action: 'prompt', id };
  const tool = RELATED_IMAGE_TOOLS.find((t) => t === match[2]);
  return match[1] === 't' && tool ? { action: 'tool', tool, id } : null;
}

/** The cheapest model of a tool the plan allows. */
export function relatedToolModel(catalog: Catalog, plan: Plan, tool: string): CatalogModel | null {
  return modelsFor(catalog, plan, 'tool').find((l) => l.model.upstreamModel === tool)?.model ?? null;
}

/**
 * The keyboard under a result: Again with its price (what this one was charged: the same request
 * costs the same), Change prompt when a dialog made it, and the plan's related tools on a picture.
 */
export function resultKeyboard(
  generation: Pick<Generation, 'id' | 'category' | 'prompt' | 'tokensSpent' | 'price'>,
  options: { texts: Texts; words: ResultTexts; picture: boolean; catalog: Catalog; plan: Plan },
): InlineKeyboard {
  const { texts, words, catalog, plan } = options;
  const keyboard = new InlineKeyboard().text(words.again(generation.tokensSpent || generation.price), `res:a:${generation.id}`);
  if (DIALOG_OF_CATEGORY[generation.category] && generation.prompt) keyboard.text(words.changePrompt, `res:p:${generation.id}`);
  if (options.picture) {
    const tools = RELATED_IMAGE_TOOLS.filter((tool) => relatedToolModel(catalog, plan, tool));
    if (tools.length) keyboard.row();
    for (const tool of tools) keyboard.text(texts.toolNames[tool], `res:t:${tool}:${generation.id}`);
  }
  return keyboard;
}
