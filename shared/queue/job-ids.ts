/**
 * Job ids: the queue drops a job whose id it still holds, so each id names one piece of work
 * (a generation's run, one delivery attempt, one firing) and a second enqueue of it is a no-op.
 */
export const jobIds = {
  generationRun: (generationId: number): string => `gen-${generationId}`,
  /** A run put back because its provider was busy: a new id per claim, so the queue takes it. */
  deferredRun: (generationId: number, attempts: number): string => `gen-${generationId}-w${attempts}`,
  botChat: (generationId: number): string => `bot-chat-${generationId}`,
  botDeliver: (generationId: number): string => `bot-deliver-${generationId}`,
  botInline: (generationId: number): string => `bot-inline-${generationId}`,
  webhookDelivery: (deliveryId: number, attempts: number): string => `whd-${deliveryId}-${attempts}`,
  scheduleFiring: (scheduleId: number, stamp: string): string => `sch-${scheduleId}-${stamp}`,
  maintenance: (task: string, minute: string): string => `maint-${task}-${minute}`,
};
