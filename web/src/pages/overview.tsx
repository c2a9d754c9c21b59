/**
 * Overview: the plan and its expiry, the balance split (plan, bonus, held), usage against the
 * allowance and the hourly/daily limits, tokens spent per day (from the ledger), the next refill,
 * and how to top up (what is for sale, redeeming a code).
 */
import type { JSX } from 'preact';
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useAccount } from '../account';
import { call, get, publicCall, post } from '../api';
import { ErrorNotice, Loading, Notice, PageTitle } from '../components/ui';
import type { DaySpend } from '../components/spend-chart';
import { formatTokens, localDay } from '../format';
import { useI18n } from '../i18n';
import type { Balance, LedgerEntry, Page, Products, User } from '../types';

const CHART_DAYS = 14;

interface Limits {
  hourLimit: number;
  hourLeft: number | null;
  dayLimit: number;
  dayLeft: number | null;
}

function limitsFrom(headers: Headers): Limits {
  const read = (name: string): number | null => {
    const value = headers.get(name);
    return value === null ? null : Number(value);
  };
  return {
    hourLimit: read('x-ratelimit-limit-hour') ?? 0,
    hourLeft: read('x-ratelimit-remaining-hour'),
    dayLimit: read('x-ratelimit-limit-day') ?? 0,
    dayLeft: read('x-ratelimit-remaining-day'),
  };
}

/** Tokens charged per local day over the last CHART_DAYS days (ledger rows of generations). */
async function spendPerDay(): Promise<DaySpend[]> {
  const since = new Date();
  since.setHours(0, 0, 0, 0);
  since.setDate(since.getDate() - (CHART_DAYS - 1));
  const totals = new Map<string, number>();
  for (let page = 1; page <= 5; page++) {
    const ledger = await get<Page<LedgerEntry>>(`/user/transactions?page=${page}&limit=100`);
    let older = false;
    for (const entry of ledger.items) {
      const at = new Date(entry.created_at);
      if (at < since) {
        older = true;
        continue;
      }
      if (entry.reason === 'generation' && entry.amount < 0) totals.set(localDay(at), (totals.get(localDay(at)) ?? 0) - entry.amount);
    }
    if (older || page >= ledger.pages) break;
  }
  const days: DaySpend[] = [];
  for (let i = 0; i < CHART_DAYS; i++) {
    const day = new Date(since);
    day.setDate(since.getDate() + i);
    days.push({ day: day.getTime() / 1000, tokens: totals.get(localDay(day)) ?? 0 });
  }
  return days;
}

export function Overview(): JSX.Element {
  const i18n = useI18n();
  const { t, lang } = i18n;
  const account = useAccount();
  const [balance, setBalance] = useState<Balance | null>(null);
  const [user, setUser] = useState<User>(account.user);
  const [limits, setLimits] = useState<Limits | null>(null);
  const [days, setDays] = useState<DaySpend[] | null>(null);
  const [Chart, setChart] = useState<ComponentType<{ days: DaySpend[]; label: string }> | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    void (async () => {
      try {
        const [me, bal, spend] = await Promise.all([call<User>('GET', '/user/me'), get<Balance>('/user/balance'), spendPerDay()]);
        setUser(me.data);
        setLimits(limitsFrom(me.headers));
        setBalance(bal);
        setDays(spend);
      } catch (e) {
        setError(e);
      }
    })();
    void import('../components/spend-chart').then((module) => setChart(() => module.default));
  }, []);

  if (error) return <ErrorNotice error={error} />;
  const n = (value: number): string => formatTokens(value, lang);
  const spent = days?.reduce((sum, d) => sum + d.tokens, 0) ?? 0;

  return (
    <section>
      <PageTitle>{t('overview.title')}</PageTitle>
      {!balance || !limits || !days ? (
        <Loading />
      ) : (
        <>
          <div class="cards">
            <article class="card" aria-labelledby="plan-h">
              <h2 id="plan-h">{t('overview.plan')}</h2>
              <p class="big" data-testid="plan-name">
                {t(`plan.${balance.plan}`)}
              </p>
              <p>{balance.plan_expires_at ? t('overview.expires', { date: i18n.date(balance.plan_expires_at) }) : t('overview.noExpiry')}</p>
              <p>{balance.next_refill_at ? t('overview.nextRefill', { date: i18n.dateTime(balance.next_refill_at) }) : t('overview.noRefill')}</p>
            </article>
            <article class="card" aria-labelledby="balance-h">
              <h2 id="balance-h">{t('overview.balance')}</h2>
              <p class="big" data-testid="balance-total">
                {n(balance.token_balance)}
              </p>
              <dl class="pairs">
                <dt>{t('overview.subscription')}</dt>
                <dd data-testid="balance-subscription">{n(balance.plan_tokens_remaining)}</dd>
                <dt>{t('overview.bonus')}</dt>
                <dd data-testid="balance-bonus">{n(balance.bonus_tokens)}</dd>
                <dt>{t('overview.held')}</dt>
                <dd data-testid="balance-held">{n(balance.held_tokens)}</dd>
              </dl>
            </article>
            <article class="card" aria-labelledby="usage-h">
              <h2 id="usage-h">{t('overview.usage')}</h2>
              <p data-testid="usage-period">{t('overview.period', { used: n(user.tokens_used_this_period), limit: n(user.token_limit) })}</p>
              <progress max={Math.max(1, user.token_limit)} value={Math.min(user.tokens_used_this_period, user.token_limit)} aria-labelledby="usage-h" />
              {limits.hourLimit === 0 && limits.dayLimit === 0 ? (
                <p>{t('overview.unlimited')}</p>
              ) : (
                <>
                  <p data-testid="usage-hour">{t('overview.hourly', { left: limits.hourLeft ?? limits.hourLimit, limit: limits.hourLimit })}</p>
                  <p data-testid="usage-day">{t('overview.daily', { left: limits.dayLeft ?? limits.dayLimit, limit: limits.dayLimit })}</p>
                </>
              )}
            </article>
          </div>
          <article class="card wide" aria-labelledby="chart-h">
            <h2 id="chart-h">{t('overview.chart')}</h2>
            {spent === 0 ? <p>{t('overview.chartEmpty', { days: CHART_DAYS })}</p> : Chart ? <Chart days={days} label={t('overview.tokens')} /> : null}
            <details>
              <summary>{t('overview.chartTable')}</summary>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t('overview.day')}</th>
                    <th scope="col">{t('overview.tokens')}</th>
                  </tr>
                </thead>
                <tbody>
                  {days.map((d) => (
                    <tr key={d.day}>
                      <td>{i18n.date(new Date(d.day * 1000).toISOString())}</td>
                      <td>{n(d.tokens)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </details>
          </article>
          <TopUp onRedeemed={() => void account.reload().then(() => get<Balance>('/user/balance').then(setBalance))} />
        </>
      )}
    </section>
  );
}

function formatPrice(price: { amount: number; currency: string }, lang: 'en' | 'ru'): string {
  return new Intl.NumberFormat(lang === 'ru' ? 'ru-RU' : 'en-GB', { style: 'currency', currency: price.currency.toUpperCase() }).format(price.amount / 100);
}

/** Stripe sends the buyer back here with `?checkout=success` or `?checkout=cancelled` (STRIPE_SUCCESS_URL). */
function checkoutReturn(): 'success' | 'cancelled' | null {
  const value = new URLSearchParams(window.location.search).get('checkout');
  return value === 'success' || value === 'cancelled' ? value : null;
}

/** How often, and how many times, the balance is read again after a paid checkout (the webhook credits it). */
const AFTER_CHECKOUT_POLL_MS = 2000;
const AFTER_CHECKOUT_POLLS = 15;

/** What is for sale (bought by card through Stripe Checkout), and redeeming a code. */
function TopUp({ onRedeemed }: { onRedeemed: () => void }): JSX.Element {
  const { t, lang } = useI18n();
  const [products, setProducts] = useState<Products | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [buyError, setBuyError] = useState<unknown>(null);
  const [done, setDone] = useState<number | null>(null);
  const [busy, setBusy] = useState(false);
  const [returned] = useState(checkoutReturn);
  useEffect(() => {
    publicCall<Products>('GET', '/billing/products').then(setProducts, () => setProducts({ token_packs: [], plans: [] }));
    if (window.location.hash === '#top-up' || returned) document.getElementById('top-up')?.scrollIntoView();
  }, []);
  useEffect(() => {
    if (returned !== 'success') return undefined;
    // The purchase is credited when Stripe's webhook arrives, usually within seconds of the return.
    let polls = 0;
    const timer = setInterval(() => {
      onRedeemed();
      if (++polls >= AFTER_CHECKOUT_POLLS) clearInterval(timer);
    }, AFTER_CHECKOUT_POLL_MS);
    return () => clearInterval(timer);
  }, [returned]);
  const buy = (product: string): void => {
    setBusy(true);
    setBuyError(null);
    post<{ id: string; url: string }>('/billing/checkout', { product })
      .then((session) => window.location.assign(session.url))
      .catch((failure: unknown) => {
        setBuyError(failure);
        setBusy(false);
      });
  };
  const redeem = (event: JSX.TargetedEvent<HTMLFormElement>): void => {
    event.preventDefault();
    const code = String(new FormData(event.currentTarget).get('code') ?? '');
    setBusy(true);
    setError(null);
    setDone(null);
    post<{ balance: { token_balance: number } }>('/billing/redeem', { code })
      .then((result) => {
        setDone(result.balance.token_balance);
        onRedeemed();
      })
      .catch(setError)
      .finally(() => setBusy(false));
  };
  return (
    <article class="card wide" id="top-up" aria-labelledby="topup-h">
      <h2 id="topup-h">{t('overview.topUp')}</h2>
      {products && (products.token_packs.length > 0 || products.plans.length > 0) ? (
        <div class="cards">
          <div>
            <h3>{t('overview.packs')}</h3>
            <ul>
              {products.token_packs.map((p) => (
                <li key={p.id}>
                  {p.name} — {formatPrice(p.price, lang)}{' '}
                  <button type="button" disabled={busy} aria-label={t('overview.buyNamed', { name: p.name })} onClick={() => buy(p.id)}>
                    {t('overview.buy')}
                  </button>
                </li>
              ))}
            </ul>
          </div>
          <div>
            <h3>{t('overview.plans')}</h3>
            <ul>
              {products.plans.map((p) => (
                <li key={p.id}>
                  {t('overview.planLine', { plan: t(`plan.${p.plan}`), n: formatTokens(p.token_limit, lang), price: formatPrice(p.price, lang) })}{' '}
                  <button type="button" disabled={busy} aria-label={t('overview.buyNamed', { name: t(`plan.${p.plan}`) })} onClick={() => buy(p.id)}>
                    {t('overview.buy')}
                  </button>
                </li>
              ))}
            </ul>
          </div>
        </div>
      ) : null}
      {returned === 'success' ? <Notice tone="success">{t('overview.checkoutSuccess')}</Notice> : null}
      {returned === 'cancelled' ? <Notice>{t('overview.checkoutCancelled')}</Notice> : null}
      <ErrorNotice error={buyError} context="checkout" />
      <p class="hint">{t('overview.buyHint')}</p>
      <form class="inline" onSubmit={redeem}>
        <label>
          {t('overview.code')}
          <input name="code" required maxLength={64} autocomplete="off" />
        </label>
        <button type="submit" disabled={busy}>
          {t('overview.redeem')}
        </button>
      </form>
      <ErrorNotice error={error} />
      {done !== null ? <Notice tone="success">{t('overview.redeemed', { n: formatTokens(done, lang) })}</Notice> : null}
    </article>
  );
}
