/**
 * A chat turn the bot starts: a text generation with the chat's model and conversation, accepted
 * through the normal pipeline and queued as a `bot.chat` job that streams the reply. Both the bot
 * (a text message) and the worker (the transcript of a voice message) start turns, so it lives here.
 */
import type { Api } from 'grammy';
import type { Assistant, Assistants } from '../assistants';
import { AppError } from '../errors';
import type { Catalog, CatalogModel, ModelListing } from '../catalog';
import type { Category } from '../catalog/types';
import type { Clock } from '../clock';
import type { Generation, User } from '../db/entities';
import type { GenerateRequest } from '../generation/input';
import { type Generations, runJobId } from '../generation/service';
import type { Plan } from '../plans';
import type { ChatMessage } from '../providers/types';
import type { Queue } from '../queue/types';
import type { BotDeliveries } from './deliveries';
import { PERSONA_TEXTS } from './persona-texts';
import { refusalText } from './refusal';
import type { ChatStates, ChatTurn } from './state';
import { Language, TEXTS } from './texts';

/** Characters of history per token of the model's context, and the share of it the history may use. */
const CHARS_PER_TOKEN = 4;
const HISTORY_SHARE = 0.75;
const DEFAULT_HISTORY_CHARS = 48_000;

/** A text persona's own model when the plan allows it (else the chat's model runs with its prompt). */
function personaModel(catalog: Catalog, plan: Plan, persona: Assistant | undefined): CatalogModel | null {
  if (!persona) return null;
  const listing = modelsFor(catalog, plan, 'text').find((l) => l.model.slug === persona.model);
  return listing?.model ?? null;
}

/** The offered models of a category the plan allows, cheapest first. */
export function modelsFor(catalog: Catalog, plan: Plan, category: Category): ModelListing[] {
  return catalog.list({ category, availableAt: plan.name }).sort((a, b) => a.tokenCost - b.tokenCost);
}

/**
 * The chat model: the one chosen in /settings while the plan allows it, otherwise the cheapest
 * offered text model the plan allows, preferring one that streams (replies appear as they come).
 */
export function chatModel(catalog: Catalog, plan: Plan, chosen: string | null): CatalogModel | null {
  const allowed = modelsFor(catalog, plan, 'text');
  const picked = chosen ? allowed.find((l) => l.model.slug === chosen) : undefined;
  if (picked) return picked.model;
  return (allowed.find((l) => l.model.supportsStreaming) ?? allowed[0])?.model ?? null;
}

/** The history and the new turn, oldest turns dropped to fit the model's context. */
export function trimToContext(history: ChatTurn[], text: string, model: CatalogModel): ChatMessage[] {
  const maxContext = typeof model.config.max_context === 'number' ? model.config.max_context : null;
  const budget = maxContext ? Math.floor(maxContext * CHARS_PER_TOKEN * HISTORY_SHARE) : DEFAULT_HISTORY_CHARS;
  const turns: ChatTurn[] = [...history, { role: 'user', content: text }];
  let total = turns.reduce((n, t) => n + t.content.length, 0);
  let start = 0;
  while (start < turns.length - 1 && total > budget) {
    total -= turns[start]?.content.length ?? 0;
    start++;
  }
  while (start < turns.length - 1 && turns[start]?.role === 'assistant') start++;
  return turns.slice(start).map((t) => ({ role: t.role, content: t.content }));
}

/** What starting a chat turn needs (the container's parts of these names). */
export interface ChatTurnDeps {
  catalog: Catalog;
  assistants: Pick<Assistants, 'find'>;
  generations: Pick<Generations, 'start'>;
  queue: Pick<Queue, 'enqueue'>;
  clock: Clock;
  chats: ChatStates;
  botDeliveries: BotDeliveries;
}

export interface ChatTurnRequest {
  user: User;
  plan: Plan;
  language: Language;
  chatId: string;
  text: string;
  /** The update that asked for it: a redelivery is not charged twice. */
  idempotencyKey: string;
  /** In groups the placeholder answers the person's message. */
  replyTo?: number;
}

/** Accepts the turn and queues it; refusals and failures are answered in the chat. */
export async function startChatTurn(deps: ChatTurnDeps, api: Api, turn: ChatTurnRequest): Promise<void> {
  const { catalog, generations, queue, clock, chats, botDeliveries: deliveries } = deps;
  const texts = TEXTS[turn.language];
  const state = await chats.load(turn.chatId);
  const persona = state.assistantId ? deps.assistants.find(state.assistantId) : undefined;
  const model = personaModel(catalog, turn.plan, persona) ?? chatModel(catalog, turn.plan, state.textModel);
  if (!model) {
    await api.sendMessage(turn.chatId, texts.noTextModel);
    return;
  }
  /** The placeholder the reply streams into, and where it goes; false when a redelivered update made them already. */
  const announce = async (generation: Generation): Promise<boolean> => {
    if (await deliveries.get(generation.id)) return false;
    const placeholder = await api.sendMessage(turn.chatId, texts.thinking, turn.replyTo ? { reply_parameters: { message_id: turn.replyTo } } : {});
    return deliveries.create({ generationId: generation.id, chatId: turn.chatId, messageId: placeholder.message_id, kind: 'chat', language: turn.language, prompt: turn.text });
  };
  // The persona's system prompt and default parameters are applied by the pipeline, once, as for the API.
  const request: GenerateRequest = {
    model: model.slug,
    messages: trimToContext(state.history, turn.text, model),
    ...(persona ? { assistant_id: persona.id } : {}),
    topLevel: {},
  };
  let started;
  try {
    // Queued as a `bot.chat` job, which streams the reply into the placeholder.
    started = await generations.start({ user: turn.user, plan: turn.plan }, request, {
      idempotencyKey: turn.idempotencyKey,
      source: 'bot',
      runIn: 'background',
      job: 'bot.chat',
      beforeRun: announce,
    });
  } catch (error) {
    if (persona && error instanceof AppError && error.code === 'not_found') {
      // Uninstalled elsewhere (the web, the API) since it was chosen: back to the plain chat, said once.
      await chats.update(turn.chatId, (s) => {
        s.assistantId = null;
      });
      await api.sendMessage(turn.chatId, PERSONA_TEXTS[turn.language].gone(persona.name));
      return;
    }
    const refusal = refusalText(error, texts, clock());
    if (refusal === null) throw error;
    await api.sendMessage(turn.chatId, refusal);
    return;
  }
  const { generation } = started;
  if (generation.status === 'pending') return;
  // Ended already: refused by the content policy now, or a replay of a turn that ended meanwhile
  // (said once: a replay whose reply went out already says nothing).
  if (started.replay && (await deliveries.get(generation.id))) return;
  if (generation.status === 'failed') {
    await api.sendMessage(turn.chatId, texts.failed(generation.error ?? ''));
    return;
  }
  if (await announce(generation)) await queue.enqueue('bot.chat', { generationId: generation.id }, { jobId: runJobId('bot.chat', generation.id) });
}
