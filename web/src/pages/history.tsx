/** History: filters (category, model, status, favorites), paging, previews, favorite, rate, run again, delete. */

/** The playground with this generation's model, prompt and options filled in (it shows the price before running). */
function againHref(item: HistoryItem): string {
  const q = new URLSearchParams({ model: item.model_slug });
  if (item.prompt) q.set('prompt', item.prompt);
  if (item.params && Object.keys(item.params).length > 0) q.set('params', JSON.stringify(item.params));
  return `/playground?${q.toString()}`;
}
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { del, get, post } from '../api';
import { ResultView } from '../components/result';
import { ConfirmDialog, ErrorNotice, Loading, PageTitle } from '../components/ui';
import { formatTokens } from '../format';
import { useI18n } from '../i18n';
import { Link } from '../router';
import { CATEGORIES } from '../types';
import type { HistoryItem, Model, Page } from '../types';

const PAGE_SIZE = 12;

interface Filters {
  category: string;
  model: string;
  status: string;
  favorites: boolean;
}

function query(filters: Filters, page: number): string {
  const q = new URLSearchParams({ page: String(page), limit: String(PAGE_SIZE) });
  if (filters.category) q.set('category', filters.category);
  if (filters.model) q.set('model', filters.model);
  if (filters.status) q.set('status', filters.status);
  if (filters.favorites) q.set('favorites_only', 'true');
  return q.toString();
}

export function History(): JSX.Element {
  const i18n = useI18n();
  const { t, lang } = i18n;
  const [filters, setFilters] = useState<Filters>({ category: '', model: '', status: '', favorites: false });
  const [page, setPage] = useState(1);
  const [data, setData] = useState<Page<HistoryItem> | null>(null);
  const [models, setModels] = useState<Model[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [deleting, setDeleting] = useState<HistoryItem | null>(null);
  const [version, setVersion] = useState(0);

  useEffect(() => {
    get<{ models: Model[] }>('/models').then((answer) => setModels(answer.models), () => undefined);
  }, []);

  useEffect(() => {
    const controller = new AbortController();
    get<Page<HistoryItem>>(`/user/history?${query(filters, page)}`, controller.signal).then(
      (answer) => {
        setData(answer);
        setError(null);
      },
      (e: unknown) => {
        if (!(e instanceof DOMException)) setError(e);
      },
    );
    return () => controller.abort();
  }, [filters, page, version]);

  const change = (next: Partial<Filters>): void => {
    setFilters({ ...filters, ...next });
    setPage(1);
  };

  const act = (action: Promise<unknown>): void => {
    action.then(() => setVersion((v) => v + 1), setError);
  };

  return (
    <section>
      <PageTitle>{t('history.title')}</PageTitle>
      <form class="filters" aria-label={t('history.filters')} onSubmit={(e) => e.preventDefault()}>
        <label>
          {t('history.category')}
          <select name="category" value={filters.category} onChange={(e) => change({ category: e.currentTarget.value })}>
            <option value="">{t('history.any')}</option>
            {CATEGORIES.map((c) => (
              <option key={c} value={c}>
                {t(`category.${c}`)}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t('history.model')}
          <select name="model" value={filters.model} onChange={(e) => change({ model: e.currentTarget.value })}>
            <option value="">{t('history.any')}</option>
            {models.map((m) => (
              <option key={m.slug} value={m.slug}>
                {m.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t('history.status')}
          <select name="status" value={filters.status} onChange={(e) => change({ status: e.currentTarget.value })}>
            <option value="">{t('history.any')}</option>
            <option value="completed">{t('status.completed')}</option>
            <option value="pending">{t('status.pending')}</option>
            <option value="failed">{t('status.failed')}</option>
          </select>
        </label>
        <label class="check">
          <input type="checkbox" name="favorites" checked={filters.favorites} onChange={(e) => change({ favorites: e.currentTarget.checked })} />
          {t('history.favoritesOnly')}
        </label>
      </form>
      <ErrorNotice error={error} />
      {!data ? (
        <Loading />
      ) : data.items.length === 0 ? (
        <p data-testid="history-empty">{t('history.empty')}</p>
      ) : (
        <>
          <ul class="history" aria-live="polite">
            {data.items.map((item) => (
              <li key={item.id} class="card history-item" data-testid="history-item" data-id={item.id}>
                <div class="preview">
                  <ResultView category={item.category} url={item.result_url} thumbnailUrl={item.thumbnail_url} text={item.result_text} alt={item.prompt ?? item.model_name} compact />
                </div>
                <div class="meta">
                  <h2 class="item-title">{item.model_name}</h2>
                  {item.prompt ? <p class="snippet">{item.prompt}</p> : null}
                  <p class="muted">
                    <time dateTime={item.created_at}>{i18n.dateTime(item.created_at)}</time> · {t(`status.${item.status}`)} · {t('history.tokens', { n: formatTokens(item.tokens_spent, lang) })}
                  </p>
                  <div class="actions">
                    <button type="button" aria-pressed={item.is_favorited} onClick={() => act(post(`/user/history/${item.id}/favorite`))}>
                      <span aria-hidden="true">{item.is_favorited ? '★' : '☆'}</span> {t('history.favorite')}
                    </button>
                    {item.status === 'completed' ? (
                      <label class="rate">
                        {t('history.rate')}
                        <select value={item.user_rating === null ? '' : String(item.user_rating)} onChange={(e) => act(post(`/user/history/${item.id}/rate`, { rating: Number(e.currentTarget.value) }))}>
                          <option value="" disabled>
                            —
                          </option>
                          {[1, 2, 3, 4, 5].map((r) => (
                            <option key={r} value={r}>
                              {'★'.repeat(r)}
                            </option>
                          ))}
                        </select>
                      </label>
                    ) : null}
                    {item.params ? (
                      <Link href={againHref(item)} aria-label={t('history.againLabel', { model: item.model_name })}>
                        {t('history.again')}
                      </Link>
                    ) : null}
                    <button type="button" class="danger" onClick={() => setDeleting(item)}>
                      {t('history.delete')}
                    </button>
                  </div>
                </div>
              </li>
            ))}
          </ul>
          <nav class="pager" aria-label={t('history.pageOf', { page: data.page, pages: Math.max(1, data.pages) })}>
            <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
              {t('history.prev')}
            </button>
            <span>{t('history.pageOf', { page: data.page, pages: Math.max(1, data.pages) })}</span>
            <button type="button" disabled={page >= data.pages} onClick={() => setPage(page + 1)}>
              {t('history.next')}
            </button>
          </nav>
        </>
      )}
      <ConfirmDialog
        open={deleting !== null}
        message={t('history.confirmDelete')}
        confirmLabel={t('common.delete')}
        onCancel={() => setDeleting(null)}
        onConfirm={() => {
          const item = deleting;
          setDeleting(null);
          if (item) act(del(`/user/history/${item.id}`));
        }}
      />
    </section>
  );
}
