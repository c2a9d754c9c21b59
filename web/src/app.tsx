/**
 * The shell: restores the session from the refresh cookie, picks the language (the account's
 * setting once signed in), routes to a page, and keeps signed-out visitors on the sign-in pages.
 */
import type { JSX } from 'preact';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { AccountContext } from './account';
import type { Account } from './account';
import { get, refreshSession, signOut as endSession, whenSignedOut } from './api';
import { browserLanguage, I18nContext, i18nFor } from './i18n';
import type { Language } from './i18n';
import { Link, navigate, useLocation } from './router';
import type { Settings, User } from './types';
import { formatTokens } from './format';
import { Loading, PageTitle } from './components/ui';
import { ForgotPassword, ResetPassword, SignIn, Register } from './pages/auth';
import { IDENTITY_PROVIDER_RETURN_PATH, IdentityProviderReturn, TELEGRAM_RETURN_PATH, TelegramReturn } from './pages/sign-in-with';
import { Overview } from './pages/overview';
import { Playground } from './pages/playground';
import { History } from './pages/history';
import { Keys } from './pages/keys';
import { SettingsPage } from './pages/settings';
import { Transactions } from './pages/transactions';
import { AccountPage } from './pages/account';
import { Assistants } from './pages/assistants';
import { Schedules } from './pages/schedules';
import { Webhooks } from './pages/webhooks';

const PUBLIC_PAGES = new Set(['/sign-in', '/register', '/forgot-password', '/reset-password', TELEGRAM_RETURN_PATH, IDENTITY_PROVIDER_RETURN_PATH]);

type Phase = { kind: 'starting' } | { kind: 'signed-out' } | { kind: 'signed-in'; user: User };

async function loadAccount(): Promise<{ user: User; settings: Settings }> {
  const [user, settings] = await Promise.all([get<User>('/user/me'), get<Settings>('/user/settings')]);
  return { user, settings };
}

export function App(): JSX.Element {
  const [phase, setPhase] = useState<Phase>({ kind: 'starting' });
  const [lang, setLang] = useState<Language>(browserLanguage);
  const location = useLocation();
  const i18n = useMemo(() => i18nFor(lang), [lang]);

  const enter = useCallback(async () => {
    const { user, settings } = await loadAccount();
    setLang(settings.language);
    setPhase({ kind: 'signed-in', user });
  }, []);

  useEffect(() => {
    whenSignedOut(() => setPhase({ kind: 'signed-out' }));
    void (async () => {
      if (await refreshSession()) await enter().catch(() => setPhase({ kind: 'signed-out' }));
      else setPhase({ kind: 'signed-out' });
    })();
  }, [enter]);

  useEffect(() => {
    document.documentElement.lang = lang;
  }, [lang]);

  // Signed-out visitors see the sign-in pages only; signed-in ones skip them.
  useEffect(() => {
    if (phase.kind === 'signed-out' && !PUBLIC_PAGES.has(location.path)) {
      const next = location.path === '/' ? '' : `?next=${encodeURIComponent(location.path + window.location.search)}`;
      navigate(`/sign-in${next}`, { replace: true });
    }
    if (phase.kind === 'signed-in' && (PUBLIC_PAGES.has(location.path) || location.path === '/')) {
      const next = location.query.get('next');
      navigate(next && next.startsWith('/') && !next.startsWith('//') ? next : '/overview', { replace: true });
    }
  }, [phase, location]);

  const account = useMemo<Account | null>(() => {
    if (phase.kind !== 'signed-in') return null;
    return {
      user: phase.user,
      reload: async () => {
        const user = await get<User>('/user/me');
        setPhase({ kind: 'signed-in', user });
      },
      setLanguage: setLang,
      signOut: async () => {
        await endSession();
        setPhase({ kind: 'signed-out' });
      },
    };
  }, [phase]);

  let content: JSX.Element;
  if (phase.kind === 'starting') content = <Loading />;
  else if (phase.kind === 'signed-out') content = <PublicPage path={location.path} onSignedIn={enter} />;
  else content = <PrivatePage path={location.path} />;

  return (
    <I18nContext.Provider value={i18n}>
      <AccountContext.Provider value={account}>
        <a class="skip" href="#main">
          {i18n.t('app.skip')}
        </a>
        {account ? <Header account={account} path={location.path} /> : <header class="top bare"><span class="brand">gensvc</span></header>}
        <main id="main" tabIndex={-1}>
          {content}
        </main>
      </AccountContext.Provider>
    </I18nContext.Provider>
  );
}

function PublicPage({ path, onSignedIn }: { path: string; onSignedIn: () => Promise<void> }): JSX.Element {
  switch (path) {
    case '/register':
      return <Register onSignedIn={onSignedIn} />;
    case '/forgot-password':
      return <ForgotPassword />;
    case '/reset-password':
      return <ResetPassword />;
    case TELEGRAM_RETURN_PATH:
      return <TelegramReturn onSignedIn={onSignedIn} />;
    case IDENTITY_PROVIDER_RETURN_PATH:
      return <IdentityProviderReturn onSignedIn={onSignedIn} />;
    default:
      return <SignIn onSignedIn={onSignedIn} />;
  }
}

function PrivatePage({ path }: { path: string }): JSX.Element {
  switch (path) {
    case '/overview':
    case '/':
      return <Overview />;
    case '/playground':
      return <Playground />;
    case '/history':
      return <History />;
    case '/keys':
      return <Keys />;
    case '/settings':
      return <SettingsPage />;
    case '/transactions':
      return <Transactions />;
    case '/account':
      return <AccountPage />;
    case '/assistants':
      return <Assistants />;
    case '/schedules':
      return <Schedules />;
    case '/webhooks':
      return <Webhooks />;
    default:
      return <NotFound />;
  }
}

function NotFound(): JSX.Element {
  return (
    <I18nContext.Consumer>
      {({ t }) => (
        <section>
          <PageTitle>{t('app.notFound')}</PageTitle>
          <Link href="/overview">{t('app.toOverview')}</Link>
        </section>
      )}
    </I18nContext.Consumer>
  );
}

const NAV = [
  ['/overview', 'nav.overview'],
  ['/playground', 'nav.playground'],
  ['/assistants', 'nav.assistants'],
  ['/schedules', 'nav.schedules'],
  ['/history', 'nav.history'],
  ['/transactions', 'nav.transactions'],
  ['/keys', 'nav.keys'],
  ['/webhooks', 'nav.webhooks'],
  ['/settings', 'nav.settings'],
  ['/account', 'nav.account'],
] as const;

function Header({ account, path }: { account: Account; path: string }): JSX.Element {
  return (
    <I18nContext.Consumer>
      {({ t, lang }) => (
        <header class="top">
          <Link class="brand" href="/overview">
            gensvc
          </Link>
          <nav aria-label={t('nav.label')}>
            <ul>
              {NAV.map(([href, key]) => (
                <li key={href}>
                  <Link href={href} aria-current={path === href ? 'page' : undefined}>
                    {t(key)}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
          {account.user.avatar_url ? <img class="avatar" src={account.user.avatar_url} alt="" width={28} height={28} data-testid="header-avatar" /> : null}
          <span class="balance" data-testid="header-balance">
            {t('nav.balance', { n: formatTokens(account.user.token_balance, lang) })}
          </span>
          <button type="button" class="link" onClick={() => void account.signOut()}>
            {t('nav.signOut')}
          </button>
        </header>
      )}
    </I18nContext.Consumer>
  );
}
