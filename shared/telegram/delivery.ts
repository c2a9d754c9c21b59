/**
 * Results of generations the bot started, sent through the Bot API by the worker. While work
 * runs the chat shows what is coming (a chat action: typing, sending a photo, recording a voice
 * message; chat-action.ts). A chat reply streams into a native draft in private chats, or by
 * editing one message (draft-reply.ts, streaming-reply.ts); a media result is uploaded as bytes
 * read from storage (result-upload.ts), the "started" message then says it is done, and the
 * result carries the model, the price and the balance left, with buttons to run it again, change
 * the prompt, or run a related tool on it (result-buttons.ts). A voice message's transcript is
 * shown and answered as a chat turn; a failure is a message in the person's language. A person
 * who blocked the bot stops getting deliveries; nothing is retried for them.
 */
import type { Api } from 'grammy';
import type { Users } from '../accounts/users';
import { freeBalance } from '../billing';
import type { BotDelivery, Generation, User } from '../db/entities';
import type { GenerationRunner } from '../generation/runner';
import type { GenerationStore } from '../generation/store';
import type { Logger } from '../log';
import type { PlanTable } from '../plans';
import type { Queue } from '../queue/types';
import type { Storage } from '../storage';
import { isNotModified, isTransient, isUnreachable } from './api';
import { actionFor, withChatAction } from './chat-action';
import { ChatTurnDeps, startChatTurn } from './chat-turn';
import type { BotDeliveries } from './deliveries';
import { openReplyView, ReplyView } from './draft-reply';
import { resultKeyboard } from './result-buttons';
import { RESULT_TEXTS } from './result-texts';
import { ResultExtras, ResultOptions, sendGenerationResult } from './result-upload';
import { sendFormatted, StreamingReply } from './streaming-reply';
import type { ChatStates } from './state';
import { Texts, textsFor } from './texts';
import { languageOf } from './language';
import { jobIds } from '../queue/job-ids';

export { sendFormatted, STREAM_EDIT_INTERVAL_MS, STREAM_MIN_GROWTH, StreamingReply } from './streaming-reply';
export { sendGenerationResult, TELEGRAM_DOWNLOAD_LIMIT, TELEGRAM_UPLOAD_LIMITS } from './result-upload';
export type { ResultOptions, UploadLimits } from './result-upload';

export interface JobSignal {
  signal: AbortSignal;
}

/** What delivering needs (the container's parts of these names; a transcript starts a chat turn). */
export interface TelegramDeliveryDeps extends ChatTurnDeps {
  runner: Pick<GenerationRunner, 'fail' | 'modelOf' | 'streamText' | 'runSync'>;
  generationStore: Pick<GenerationStore, 'find'>;
  storage: Storage;
  users: Pick<Users, 'findById' | 'effectivePlan'>;
  plans: PlanTable;
  log: Logger;
}

/** What the worker's bot jobs do. */
export class TelegramDelivery {
  private readonly deliveries: BotDeliveries;
  private readonly chats: ChatStates;

  constructor(
    private readonly deps: TelegramDeliveryDeps,
    readonly api: Api,
    private readonly resultOptions: ResultOptions = {},
  ) {
    this.deliveries = deps.botDeliveries;
    this.chats = deps.chats;
  }

  private reload(generationId: number): Promise<Generation | null> {
    return this.deps.generationStore.find(generationId);
  }

  /** The `bot.chat` job: runs a chat turn, streaming the reply into the placeholder message. */
  async runChat(generationId: number, job: JobSignal): Promise<void> {
    const { runner, log } = this.deps;
    const delivery = await this.deliveries.get(generationId);
    if (!delivery || delivery.state !== 'pending') return;
    let generation = await this.reload(generationId);
    if (!generation) {
      await this.deliveries.finish(generationId, 'failed');
      return;
    }
    const texts = textsFor(delivery.language);
    if ((await this.chats.load(delivery.chatId)).blocked) {
      // Nobody can read it: do not run (or charge) it.
      if (generation.status === 'pending') await runner.fail(generationId, { message: 'The chat cannot be reached', kind: 'cancelled' });
      await this.deliveries.finish(generationId, 'blocked');
      return;
    }
    const view = openReplyView(this.api, delivery.chatId, generationId, delivery.messageId, texts.thinking, log);
    if (generation.status === 'pending') {
      const pending = generation;
      // "typing…" until the reply is there, however the run ends.
      generation = await withChatAction(this.api, delivery.chatId, 'typing', () => this.runTurn(pending, view, job), { log, signal: job.signal });
    }
    if (generation.status === 'pending') return;
    if (!(await this.deliveries.claim(generationId))) return;
    try {
      if (view.unreachable) throw Object.assign(new Error('unreachable'), { unreachable: true });
      if (generation.status === 'completed') {
        const reply = generation.resultText ?? '';
        await view.finish(reply);
        const prompt = delivery.prompt;
        if (prompt !== null) {
          await this.chats.update(delivery.chatId, (state) => {
            state.history.push({ role: 'user', content: prompt }, { role: 'assistant', content: reply });
          });
        }
      } else {
        await view.replace(failureText(texts, generation));
      }
      await this.deliveries.finish(generationId, 'delivered');
    } catch (error) {
      await this.sendFailed(delivery, error, (error as { unreachable?: boolean }).unreachable === true);
    }
  }

  /** Runs a pending chat turn, streaming its text into the view; the generation as it ended. */
  private async runTurn(generation: Generation, view: ReplyView, job: JobSignal): Promise<Generation> {
    const { runner } = this.deps;
    const model = runner.modelOf(generation);
    if (!model) {
      return (await runner.fail(generation.id, { message: 'This model is no longer offered', kind: 'unavailable' })) ?? (await this.reload(generation.id)) ?? generation;
    }
    if (!model.supportsStreaming) return (await runner.runSync(generation, model, job.signal)).generation;
    const stream = runner.streamText(generation, model, job.signal);
    let text = '';
    let next = await stream.next();
    while (!next.done) {
      // A chat turn asks for no tools: only text comes, but a tool-call piece is no text.
      if (typeof next.value === 'string') text += next.value;
      await view.progress(text);
      next = await stream.next();
    }
    return next.value.generation;
  }

  /** The `bot.deliver` job: sends an ended generation's result (media) or its failure. */
  async deliver(generationId: number): Promise<void> {
    const delivery = await this.deliveries.get(generationId);
    if (!delivery || delivery.state !== 'pending') return;
    const generation = await this.reload(generationId);
    if (!generation || generation.status === 'pending') return;
    // A completed chat reply is the chat job's to deliver (it streams it).
    if (delivery.kind === 'chat' && generation.status === 'completed') return;
    if ((await this.chats.load(delivery.chatId)).blocked) {
      await this.deliveries.finish(generationId, 'blocked');
      return;
    }
    if (!(await this.deliveries.claim(generationId))) return;
    const texts = textsFor(delivery.language);
    try {
      if (generation.status === 'failed') {
        if (delivery.kind === 'chat') {
          await new StreamingReply(this.api, delivery.chatId, delivery.messageId, texts.thinking, this.deps.log).replace(failureText(texts, generation));
        } else {
          // The message that said it started now says it failed (a new one if it is gone).
          await this.updateStarted(delivery, failureText(texts, generation), true);
        }
      } else if (isVoiceTurn(generation)) {
        await this.deliverTranscript(delivery, generation, texts);
        return;
      } else {
        await this.closeLoop(delivery, generation, texts);
      }
      await this.deliveries.finish(generationId, 'delivered');
    } catch (error) {
      await this.sendFailed(delivery, error, false);
    }
  }

  /** A generation's result as an upload of its bytes (see sendGenerationResult), within this delivery's limits. */
  async sendResult(chatId: string, generation: Generation, texts: Texts, extras: ResultExtras = {}): Promise<boolean> {
    return sendGenerationResult(this.api, this.deps.storage, chatId, generation, texts, this.resultOptions, extras);
  }

  /**
   * A media result arrives: the "started" message says it is done (first, so a retry after a
   * failed upload does not send the result twice), then the result goes with the model, the
   * price charged and the balance left, and buttons: Again, Change prompt, related tools.
   */
  private async closeLoop(delivery: BotDelivery, generation: Generation, texts: Texts): Promise<void> {
    const language = languageOf(delivery.language);
    const words = RESULT_TEXTS[language];
    await this.updateStarted(delivery, words.done, false);
    const user = await this.deps.users.findById(generation.userId);
    if (!user || !generation.resultKey) {
      await this.sendResult(delivery.chatId, generation, texts);
      return;
    }
    const { catalog, plans, users } = this.deps;
    const model = catalog.find(generation.modelSlug);
    const plan = plans.get(users.effectivePlan(user));
    await this.sendResult(delivery.chatId, generation, texts, {
      captionLine: words.caption({ model: model?.name ?? generation.modelSlug, charged: generation.tokensSpent, balance: freeBalance(user) }),
      keyboard: (picture) => resultKeyboard(generation, { texts, words, picture, catalog, plan }),
    });
  }

  /**
   * The "started" message (or the one that said what is happening) says how it ended. When it
   * is gone (deleted by the person), `orSend` sends the text instead; a flood wait or an outage
   * is thrown, so the delivery is retried.
   */
  private async updateStarted(delivery: BotDelivery, text: string, orSend: boolean): Promise<void> {
    if (delivery.messageId !== null) {
      try {
        await this.api.editMessageText(delivery.chatId, delivery.messageId, text);
        return;
      } catch (error) {
        if (isTransient(error) || isUnreachable(error)) throw error;
        // Unchanged: a retry of a delivery that got this far.
        if (isNotModified(error)) return;
        this.deps.log.info({ err: (error as Error).message, generationId: delivery.generationId }, 'the started message could not be updated');
      }
    }
    if (orSend) await this.api.sendMessage(delivery.chatId, text);
  }

  /**
   * The `generation.run` job of a generation the bot started: the chat shows what is coming
   * (sending a photo, recording a voice message…) while it runs, stopped however it ends.
   */
  async whileRunning<T>(generationId: number, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    const delivery = await this.deliveries.get(generationId).catch(() => null);
    const generation = delivery?.state === 'pending' && delivery.kind === 'media' ? await this.reload(generationId).catch(() => null) : null;
    if (!delivery || !generation || generation.status !== 'pending' || (await this.chats.load(delivery.chatId)).blocked) return work();
    const action = actionFor(generation, this.deps.catalog.find(generation.modelSlug)?.upstreamModel);
    return withChatAction(this.api, delivery.chatId, action, work, { log: this.deps.log, signal });
  }

  /** A voice message's transcript is shown, then answered as the chat's next turn. */
  private async deliverTranscript(delivery: BotDelivery, generation: Generation, texts: Texts): Promise<void> {
    const transcript = (generation.resultText ?? '').trim();
    await sendFormatted(this.api, delivery.chatId, transcript ? texts.transcript(transcript) : texts.noSpeech);
    const user = transcript ? await this.deps.users.findById(generation.userId) : null;
    // The chat turn starts before the delivery counts as done: if starting it fails (a Telegram
    // 429 on its placeholder), the retry starts it (idempotent by its key) rather than never.
    if (user) await this.startTranscriptTurn(delivery, generation, user, transcript);
    await this.deliveries.finish(generation.id, 'delivered');
  }

  private async startTranscriptTurn(delivery: BotDelivery, generation: Generation, user: User, transcript: string): Promise<void> {
    const { plans, users } = this.deps;
    await startChatTurn(this.deps, this.api, {
      user,
      plan: plans.get(users.effectivePlan(user)),
      language: delivery.language === 'ru' ? 'ru' : 'en',
      chatId: delivery.chatId,
      text: transcript,
      idempotencyKey: `${generation.idempotencyKey ?? `gen-${generation.id}`}:turn`,
    });
  }

  private async sendFailed(delivery: BotDelivery, error: unknown, unreachable: boolean): Promise<void> {
    if (unreachable || isUnreachable(error)) {
      this.deps.log.info({ chatId: delivery.chatId, generationId: delivery.generationId }, 'chat unreachable (blocked?): deliveries stop');
      await this.deliveries.finish(delivery.generationId, 'blocked');
      await this.chats.update(delivery.chatId, (state) => {
        state.blocked = true;
      });
      return;
    }
    if (isTransient(error)) {
      await this.deliveries.release(delivery.generationId);
      throw error;
    }
    this.deps.log.warn({ err: (error as Error).message, generationId: delivery.generationId }, 'telegram refused a delivery');
    await this.deliveries.finish(delivery.generationId, 'failed');
  }
}

/** A transcription the bot started (a voice message or audio file): its text is a chat turn. */
function isVoiceTurn(generation: Generation): boolean {
  return generation.source === 'bot' && generation.category === 'stt';
}

function failureText(texts: Texts, generation: Generation): string {
  return texts.failed(generation.error ?? 'unknown error');
}

/**
 * Every process with a bot token: when a generation the bot started ends (in a worker, a
 * request, a cancel), its delivery is queued. The job id de-duplicates; the claim makes it once.
 */
export function watchBotGenerations(runner: GenerationRunner, queue: Queue, log: Logger): void {
  runner.onEnd((generation) => {
    // Bot generations, and schedule runs of users who talk to the bot (a delivery row decides).
    if (generation.source !== 'bot' && generation.source !== 'schedule') return;
    queue.enqueue('bot.deliver', { generationId: generation.id }, { jobId: jobIds.botDeliver(generation.id) }).catch((error: unknown) => {
      log.error({ err: error, generationId: generation.id }, 'could not queue a bot delivery');
    });
  });
}
