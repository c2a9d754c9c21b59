/** Transactions: the ledger, newest first, paged: every change of the balance and why. */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get } from '../api';
import { ErrorNotice, Loading, PageTitle } from '../components/ui';
import { formatTokens } from '../format';
import { useI18n } from '../i18n';
import type { MessageKey } from '../i18n';
import type { LedgerEntry, Page } from '../types';

const PAGE_SIZE = 25;
const REASONS: Record<string, MessageKey> = {
  signup_allowance: 'ledger.signup_allowance',
  plan_change: 'ledger.plan_change',
  refill: 'ledger.refill',
  grant: 'ledger.grant',
  correction: 'ledger.correction',
  generation: 'ledger.generation',
  purchase: 'ledger.purchase',
  redemption: 'ledger.redemption',
  refund: 'ledger.refund',
};

export function Transactions(): JSX.Element {
  const i18n = useI18n();
  const { t, lang } = i18n;
  const [page, setPage] = useState(1);
  const [data, setData] = useState<Page<LedgerEntry> | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    get<Page<LedgerEntry>>(`/user/transactions?page=${page}&limit=${PAGE_SIZE}`).then(setData, setError);
  }, [page]);

  const signed = (n: number): string => (n > 0 ? `+${formatTokens(n, lang)}` : n < 0 ? `−${formatTokens(-n, lang)}` : '0');
  return (
    <section>
      <PageTitle>{t('ledger.title')}</PageTitle>
      <ErrorNotice error={error} />
      {!data ? (
        error ? null : <Loading />
      ) : data.items.length === 0 ? (
        <p>{t('history.empty')}</p>
      ) : (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label={t('ledger.title')}>
            <table>
              <thead>
                <tr>
                  <th scope="col">{t('ledger.when')}</th>
                  <th scope="col">{t('ledger.what')}</th>
                  <th scope="col" class="num">
                    {t('ledger.amount')}
                  </th>
                  <th scope="col" class="num">
                    {t('ledger.after')}
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((entry) => {
                  const reason = REASONS[entry.reason];
                  return (
                    <tr key={entry.id} data-testid="ledger-row">
                      <td>
                        <time dateTime={entry.created_at}>{i18n.dateTime(entry.created_at)}</time>
                      </td>
                      <td>
                        {reason ? t(reason) : entry.reason}
                        {entry.generation_id !== null ? ` #${entry.generation_id}` : ''}
                      </td>
                      <td class="num">{signed(entry.amount)}</td>
                      <td class="num">{formatTokens(entry.balance_after, lang)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
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
    </section>
  );
}
