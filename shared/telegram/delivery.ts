/**
 * Results of generations the bot started, sent through the Bot API by the worker: a chat reply
 * streams by editing one message (at most about once a second, split at 4096 characters, formatted
 * with a plain-text fallback); a media result is uploaded as bytes read from storage (never a
 * link): photo, video, audio, a voice message for OGG/Opus, a document for a photo over Telegram's
 * photo limit, a clear refusal over its upload limit; a voice message's transcript is shown and
 * answered as a chat turn; a failure is a message in the person's language. A person who blocked
 * the bot stops getting deliveries; nothing is retried for them.
 */
import { Api, InputFile } from 'grammy';
import type { Users } from '../accounts/users';
import type { BotDelivery, Generation, User } from '../db/entities';
import type { GenerationRunner } from '../generation/runner';
import type { GenerationStore } from '../generation/store';
import type { Logger } from '../log';
import type { PlanTable } from '../plans';
import type { Queue } from '../queue/types';
import type { Storage } from '../storage';
import { isTransient, isUnreachable } from './api';
import { ChatTurnDeps, startChatTurn } from './chat-turn';
import type { BotDeliveries } from './deliveries';
import { sendFormatted, StreamingReply } from './streaming-reply';
import type { ChatStates } from './state';
import { Texts, textsFor } from './texts';
import { ffmpegVoiceEncoder, VoiceEncoder } from './voice-audio';
import { jobIds } from '../queue/job-ids';

export { sendFormatted, STREAM_EDIT_INTERVAL_MS, STREAM_MIN_GROWTH, StreamingReply } from './streaming-reply';

/** Bot API upload limits in bytes: larger photos go as documents, larger files are refused. */
export interface UploadLimits {
  photo: number;
  upload: number;
}
export const TELEGRAM_UPLOAD_LIMITS: UploadLimits = { photo: 10 * 1024 * 1024, upload: 50 * 1024 * 1024 };
/** Telegram lets a bot download (getFile) files up to this size. */
export const TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024;

export interface ResultOptions {
  limits?: UploadLimits;
  /** Makes speech a voice message (OGG/Opus); by default ffmpeg when it is there. */
  voice?: VoiceEncoder;
}

let defaultVoiceEncoder: VoiceEncoder | undefined;

/**
 * A generation's result as an upload of its bytes, or its text: a photo (a document over the
 * photo limit), a video, speech as a voice message (as audio when it cannot be OGG/Opus), other
 * audio, or a document; over the upload limit, a message saying it is too large.
 */
export async function sendGenerationResult(
  api: Api,
  storage: Storage,
  chatId: string | number,
  generation: Generation,
  texts: Texts,
  options: ResultOptions = {},
): Promise<void> {
  const limits = options.limits ?? TELEGRAM_UPLOAD_LIMITS;
  if (!generation.resultKey) {
    await sendFormatted(api, chatId, generation.resultText?.trim() || '…');
    return;
  }
  const stat = await storage.stat(generation.resultKey);
  if (!stat) {
    await api.sendMessage(chatId, texts.somethingWrong);
    return;
  }
  if (stat.size > limits.upload) {
    await api.sendMessage(chatId, texts.tooLarge);
    return;
  }
  const bytes = await storage.readAll(generation.resultKey);
  const extension = generation.resultKey.split('.').pop() ?? 'bin';
  const file = new InputFile(bytes, `${generation.modelSlug}-${generation.id}.${extension}`);
  const caption = (generation.prompt ?? '').slice(0, 900) || undefined;
  const type = stat.contentType;
  if (/^image\/(png|jpeg|webp)$/.test(type) && stat.size <= limits.photo) await api.sendPhoto(chatId, file, { caption });
  else if (type === 'video/mp4') await api.sendVideo(chatId, file, { caption });
  else if (type.startsWith('audio/')) {
    const encode = options.voice ?? (defaultVoiceEncoder ??= ffmpegVoiceEncoder());
    const voice = generation.category === 'tts' ? await encode(bytes) : null;
    if (voice && voice.length <= limits.upload) await api.sendVoice(chatId, new InputFile(voice, `${generation.modelSlug}-${generation.id}.ogg`), { caption });
    else await api.sendAudio(chatId, file, { caption });
  }
  else await api.sendDocument(chatId, file, { caption });
}

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
    const view = new StreamingReply(this.api, delivery.chatId, delivery.messageId, texts.thinking, log);
    if (generation.status === 'pending') {
      const model = runner.modelOf(generation);
      if (!model) {
        generation = (await runner.fail(generationId, { message: 'This model is no longer offered', kind: 'unavailable' })) ?? (await this.reload(generationId)) ?? generation;
      } else if (model.supportsStreaming) {
        const stream = runner.streamText(generation, model, job.signal);
        let text = '';
        let next = await stream.next();
        while (!next.done) {
          // A chat turn asks for no tools: only text comes, but a tool-call piece is no text.
          if (typeof next.value === 'string') text += next.value;
          await view.progress(text);
          next = await stream.next();
        }
        generation = next.value.generation;
      } else {
        await this.api.sendChatAction(delivery.chatId, 'typing').catch(() => undefined);
        generation = (await runner.runSync(generation, model, job.signal)).generation;
      }
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
          await this.api.sendMessage(delivery.chatId, failureText(texts, generation));
        }
      } else if (isVoiceTurn(generation)) {
        await this.deliverTranscript(delivery, generation, texts);
        return;
      } else {
        await this.sendResult(delivery.chatId, generation, texts);
      }
      await this.deliveries.finish(generationId, 'delivered');
    } catch (error) {
      await this.sendFailed(delivery, error, false);
    }
  }

  /** A generation's result as an upload of its bytes (see sendGenerationResult), within this delivery's limits. */
  sendResult(chatId: string, generation: Generation, texts: Texts): Promise<void> {
    return sendGenerationResult(this.api, this.deps.storage, chatId, generation, texts, this.resultOptions);
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
