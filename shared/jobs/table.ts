/** The job table: every job this service runs, with its settings from queue/settings.ts. */
import type { Container } from '../container';
import { jobSettings } from '../queue/settings';
import type { JobTable } from '../queue/types';

export function buildJobTable(container: Container): JobTable {
  const { runner, webhooks } = container;
  return {
    'generation.run': {
      ...jobSettings['generation.run'],
      perform: (payload, context) => runner.runJob(payload.generationId, context),
      onExhausted: async (payload, error) => {
        await runner.fail(payload.generationId, error.message || 'The generation failed');
      },
    },
    'webhook.deliver': {
      ...jobSettings['webhook.deliver'],
      perform: (payload, context) => webhooks.deliver(payload.deliveryId, context.signal),
    },
  };
}
