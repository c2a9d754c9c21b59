/** The job table: every job this service runs, with its settings from queue/settings.ts. */
import type { Container } from '../container';
import { jobSettings } from '../queue/settings';
import { runMaintenance } from '../maintenance';
import type { JobTable } from '../queue/types';
import { createTelegramApi } from '../telegram/api';
import { TelegramDelivery } from '../telegram/delivery';
import { InlineDelivery } from '../telegram/inline-messages';

export function buildJobTable(container: Container): JobTable {
  const { runner, webhooks, schedules, log } = container;
  // Bot jobs run only where a bot token is configured; elsewhere they are dropped with a warning.
  const telegramApi = container.config.telegram.botToken ? createTelegramApi(container.config.telegram) : null;
  const telegram = telegramApi ? new TelegramDelivery(container, telegramApi) : null;
  const inline = telegramApi ? new InlineDelivery(container, telegramApi) : null;
  const withTelegram = (job: string, work: (t: TelegramDelivery) => Promise<void>): Promise<void> => {
    if (telegram) return work(telegram);
    log.warn({ job }, 'bot job without TELEGRAM_BOT_TOKEN: dropped');
    return Promise.resolve();
  };
  return {
    'generation.run': {
      ...jobSettings['generation.run'],
      concurrency: container.config.generationJobConcurrency,
      perform: async (payload, context) => {
        const run = () => runner.runJob(payload.generationId, context);
        // A generation the bot started shows a chat action in its chat while it runs.
        const deferred = telegram ? await telegram.whileRunning(payload.generationId, context.signal, run) : await run();
        // Its provider was at its concurrency cap: the same work again later, as a new job.
        if (!deferred) return;
        try {
          await container.queue.enqueue('generation.run', payload, { jobId: deferred.jobId, delayMs: deferred.delayMs });
        } catch (error) {
          // Shutting down (or Redis away): the row is pending without a lease, so the recovery
          // sweep queues it again; failing the job here would fail a generation that can still run.
          log.warn({ err: (error as Error).message, generationId: payload.generationId }, 'deferred generation left to the recovery sweep');
        }
      },
      onExhausted: async (payload, error) => {
        await runner.fail(payload.generationId, error.message || 'The generation failed');
      },
    },
    'webhook.deliver': {
      ...jobSettings['webhook.deliver'],
      perform: (payload, context) => webhooks.deliver(payload.deliveryId, context.signal),
    },
    'schedule.run': {
      ...jobSettings['schedule.run'],
      perform: (payload) => schedules.run(payload.scheduleId, payload.fireAt),
    },
    'maintenance.run': {
      ...jobSettings['maintenance.run'],
      perform: async (payload) => {
        await runMaintenance(container.maintenance, payload.task);
      },
    },
    'bot.chat': {
      ...jobSettings['bot.chat'],
      perform: (payload, context) => withTelegram('bot.chat', (t) => t.runChat(payload.generationId, context)),
      onExhausted: async (payload, error) => {
        // The reply could not be delivered: the generation, if still running, ends uncharged.
        await runner.fail(payload.generationId, error.message || 'The reply could not be delivered');
      },
    },
    'bot.deliver': {
      ...jobSettings['bot.deliver'],
      perform: (payload) => withTelegram('bot.deliver', (t) => t.deliver(payload.generationId)),
    },
    'bot.inline': {
      ...jobSettings['bot.inline'],
      perform: async (payload) => {
        if (inline) return inline.deliver(payload.generationId);
        log.warn({ job: 'bot.inline' }, 'bot job without TELEGRAM_BOT_TOKEN: dropped');
      },
    },
  };
}
