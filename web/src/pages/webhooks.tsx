/**
 * Webhooks: where the service posts generation events. Create (the signing secret shown once),
 * send a test ping, read the delivery log, turn a disabled one back on, delete after a confirmation.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { del, get, post } from '../api';
import { ConfirmDialog, ErrorNotice, Loading, PageTitle } from '../components/ui';
import { useI18n } from '../i18n';
import type { DeliveryInfo, Page, WebhookInfo } from '../types';

const EVENTS = ['generation.completed', 'generation.failed'];

export function Webhooks(): JSX.Element {
  const i18n = useI18n();
  const { t } = i18n;
  const [hooks, setHooks] = useState<WebhookInfo[] | null>(null);
  const [created, setCreated] = useState<WebhookInfo | null>(null);
  const [events, setEvents] = useState<string[]>(EVENTS);
  const [log, setLog] = useState<{ id: number; items: DeliveryInfo[] } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [deleting, setDeleting] = useState<WebhookInfo | null>(null);
  const [version, setVersion] = useState(0);

  useEffect(() => {
    get<{ webhooks: WebhookInfo[] }>('/webhooks').then((answer) => setHooks(answer.webhooks), setError);
  }, [version]);

  const showLog = (id: number): void => {
    get<Page<DeliveryInfo>>(`/webhooks/${id}/deliveries?limit=20`).then((page) => setLog({ id, items: page.items }), setError);
  };

  const create = (event: JSX.TargetedEvent<HTMLFormElement>): void => {
    event.preventDefault();
    const form = event.currentTarget;
    const url = String(new FormData(form).get('url') ?? '');
    setError(null);
    post<WebhookInfo>('/webhooks', { url, events }).then((hook) => {
      setCreated(hook);
      form.reset();
      setVersion((v) => v + 1);
    }, setError);
  };

  // The answer is the row as it now stands: it replaces the row in place, no list reload.
  const enable = (hook: WebhookInfo): void => {
    setError(null);
    post<WebhookInfo>(`/webhooks/${hook.id}/enable`).then((fresh) => setHooks((rows) => rows?.map((row) => (row.id === fresh.id ? fresh : row)) ?? null), setError);
  };

  const status = (hook: WebhookInfo): string =>
    hook.disabled_at ? t('hooks.disabled', { at: i18n.dateTime(hook.disabled_at) }) : hook.failing_since ? t('hooks.failing', { at: i18n.dateTime(hook.failing_since) }) : t('hooks.active');

  return (
    <section>
      <PageTitle>{t('hooks.title')}</PageTitle>
      <p>{t('hooks.intro')}</p>
      <form class="stack playground" onSubmit={create}>
        <label>
          {t('hooks.url')}
          <input name="url" type="url" required maxLength={2048} placeholder="https://example.com/hooks/gensvc" />
        </label>
        <fieldset>
          <legend>{t('hooks.events')}</legend>
          {EVENTS.map((name) => (
            <label key={name} class="check">
              <input type="checkbox" checked={events.includes(name)} onChange={(e) => setEvents(e.currentTarget.checked ? [...events, name] : events.filter((x) => x !== name))} />
              <code>{name}</code>
            </label>
          ))}
        </fieldset>
        <div class="actions">
          <button type="submit" class="primary">
            {t('hooks.create')}
          </button>
        </div>
      </form>
      <ErrorNotice error={error} />
      {created?.secret ? (
        <div class="card secret" role="region" aria-labelledby="hook-secret-h">
          <h2 id="hook-secret-h">{t('hooks.secretTitle')}</h2>
          <p>{t('hooks.secretOnce')}</p>
          <div class="inline">
            <input readOnly value={created.secret} aria-labelledby="hook-secret-h" data-testid="hook-secret" onFocus={(e) => e.currentTarget.select()} />
            <button type="button" onClick={() => setCreated(null)}>
              {t('keys.done')}
            </button>
          </div>
        </div>
      ) : null}
      <h2>{t('hooks.list')}</h2>
      {!hooks ? (
        <Loading />
      ) : hooks.length === 0 ? (
        <p>{t('hooks.none')}</p>
      ) : (
        <ul class="history">
          {hooks.map((hook) => (
            <li key={hook.id} class="card history-item" data-testid="webhook">
              <h3 class="item-title">
                <code>{hook.url}</code>
              </h3>
              <p class="muted">{hook.events.join(', ')}</p>
              <p data-testid="webhook-status">{status(hook)}</p>
              <div class="actions">
                {hook.disabled_at ? (
                  <button type="button" class="primary" onClick={() => enable(hook)}>
                    {t('hooks.enable')}
                  </button>
                ) : null}
                <button type="button" onClick={() => post(`/webhooks/${hook.id}/test`).then(() => showLog(hook.id), setError)}>
                  {t('hooks.ping')}
                </button>
                <button type="button" onClick={() => showLog(hook.id)}>
                  {t('hooks.log')}
                </button>
                <button type="button" class="danger" onClick={() => setDeleting(hook)}>
                  {t('common.delete')}
                </button>
              </div>
              {log?.id === hook.id ? (
                log.items.length === 0 ? (
                  <p class="muted">{t('hooks.noDeliveries')}</p>
                ) : (
                  <ul class="deliveries" aria-label={t('hooks.log')}>
                    {log.items.map((d) => (
                      <li key={d.id} data-testid="delivery">
                        <code>{d.event}</code> · {i18n.dateTime(d.created_at)} · {t(d.status === 'succeeded' ? 'hooks.delivered' : d.status === 'failed' ? 'hooks.failedDelivery' : 'hooks.pendingDelivery')}
                        {d.last_status_code !== null ? ` (HTTP ${d.last_status_code})` : ''}
                        {d.last_error && d.last_status_code === null ? ` — ${d.last_error}` : ''}
                      </li>
                    ))}
                  </ul>
                )
              ) : null}
            </li>
          ))}
        </ul>
      )}
      <ConfirmDialog
        open={deleting !== null}
        message={t('hooks.confirmDelete', { url: deleting?.url ?? '' })}
        confirmLabel={t('common.delete')}
        onCancel={() => setDeleting(null)}
        onConfirm={() => {
          const hook = deleting;
          setDeleting(null);
          if (hook) del(`/webhooks/${hook.id}`).then(() => setVersion((v) => v + 1), setError);
        }}
      />
    </section>
  );
}
