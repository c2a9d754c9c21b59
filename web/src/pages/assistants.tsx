/** Assistants: the marketplace (search), install and remove, rate, and use one in the playground. */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { del, get, post } from '../api';
import { ErrorNotice, Loading, PageTitle } from '../components/ui';
import { useI18n } from '../i18n';
import { Link } from '../router';
import type { AssistantInfo } from '../types';

export function Assistants(): JSX.Element {
  const { t } = useI18n();
  const [search, setSearch] = useState('');
  const [market, setMarket] = useState<AssistantInfo[] | null>(null);
  const [installed, setInstalled] = useState<AssistantInfo[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [version, setVersion] = useState(0);

  useEffect(() => {
    const timer = setTimeout(() => {
      const q = new URLSearchParams({ limit: '50' });
      if (search.trim()) q.set('search', search.trim());
      get<{ assistants: AssistantInfo[] }>(`/assistants/marketplace?${q.toString()}`).then((answer) => setMarket(answer.assistants), setError);
    }, 200);
    return () => clearTimeout(timer);
  }, [search, version]);
  useEffect(() => {
    get<{ assistants: AssistantInfo[] }>('/assistants').then((answer) => setInstalled(answer.assistants), setError);
  }, [version]);

  const act = (work: Promise<unknown>): void => {
    setError(null);
    work.then(() => setVersion((v) => v + 1), setError);
  };
  const isInstalled = (id: string): boolean => installed?.some((a) => a.id === id) ?? false;

  return (
    <section>
      <PageTitle>{t('assist.title')}</PageTitle>
      <ErrorNotice error={error} />
      <h2>{t('assist.mine')}</h2>
      {!installed ? (
        <Loading />
      ) : installed.length === 0 ? (
        <p>{t('assist.none')}</p>
      ) : (
        <ul class="history">
          {installed.map((a) => (
            <li key={a.id} class="card history-item" data-testid="installed-assistant">
              <h3 class="item-title">{a.name}</h3>
              <p class="snippet">{a.description}</p>
              <div class="actions">
                <Link class="button primary" href={`/playground?assistant=${encodeURIComponent(a.id)}`}>
                  {t('assist.use')}
                </Link>
                <label class="rate">
                  {t('history.rate')}
                  <select value={a.user_rating ? String(a.user_rating) : ''} onChange={(e) => act(post(`/assistants/${encodeURIComponent(a.id)}/rate`, { rating: Number(e.currentTarget.value) }))}>
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
                <button type="button" onClick={() => act(del(`/assistants/${encodeURIComponent(a.id)}`))}>
                  {t('assist.remove')}
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
      <h2>{t('assist.market')}</h2>
      <label class="narrow">
        {t('assist.search')}
        <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
      </label>
      {!market ? (
        <Loading />
      ) : (
        <ul class="history">
          {market.map((a) => (
            <li key={a.id} class="card history-item" data-testid="market-assistant">
              <h3 class="item-title">{a.name}</h3>
              <p class="snippet">{a.description}</p>
              <p class="muted">{t('assist.stats', { installs: a.installs, rating: a.rating === null ? '—' : a.rating.toFixed(1) })}</p>
              <div class="actions">
                {isInstalled(a.id) ? (
                  <span class="muted">{t('assist.installed')}</span>
                ) : (
                  <button type="button" onClick={() => act(post(`/assistants/marketplace/${encodeURIComponent(a.id)}/install`))}>
                    {t('assist.install')}
                  </button>
                )}
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
