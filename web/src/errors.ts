/**
 * Every refusal of the API in words a person understands, with the action that fixes it: top up,
 * upgrade, wait until HH:MM, sign in, ask for a new link. Mapped by the catalogue's `code`
 * (shared/errors), never by the English detail.
 */
import { ApiError } from './api';
import type { I18n } from './i18n';

export interface ErrorAction {
  label: string;
  href: string;
}

export interface Explained {
  message: string;
  action?: ErrorAction;
}

function waitUntil(error: ApiError, i18n: I18n): string {
  const seconds = error.numberField('retry_after') ?? 60;
  return i18n.time(new Date(Date.now() + seconds * 1000));
}

export type ErrorContext = 'account' | 'auth' | 'checkout' | 'link';

/**
 * `auth`: a refusal of signing in or registering (its limits are per address, not per plan);
 * `checkout`: of paying by card; `link`: of a Telegram link code (POST /auth/link).
 */
export function explain(error: unknown, i18n: I18n, context: ErrorContext = 'account'): Explained {
  const { t } = i18n;
  if (!(error instanceof ApiError)) return { message: t('error.server', { id: '-' }) };
  if (context === 'link') {
    if (error.code === 'validation_failed') return { message: t('error.linkCode') };
    if (error.code === 'identity_conflict') {
      return { message: t(error.body.reason === 'already_linked' ? 'error.linkAlreadyLinked' : 'error.linkTelegramInUse') };
    }
  }
  const topUp = { label: t('error.topUp'), href: '/overview#top-up' };
  switch (error.code) {
    case 'network':
      return { message: t('error.network') };
    case 'insufficient_tokens': {
      const price = error.numberField('price');
      const available = error.numberField('available');
      return {
        message: price !== undefined && available !== undefined ? t('error.insufficientTokens', { price, available }) : t('error.insufficientTokensShort'),
        action: topUp,
      };
    }
    case 'insufficient_plan':
      return { message: t('error.plan'), action: { label: t('error.upgrade'), href: '/overview#top-up' } };
    case 'rate_limited':
      return { message: t(context === 'auth' ? 'error.rateLimitedAuth' : 'error.rateLimited', { time: waitUntil(error, i18n) }) };
    case 'upstream_rate_limited':
    case 'upstream_unavailable':
    case 'upstream_timeout':
      return { message: t('error.provider') };
    case 'validation_failed': {
      const fields = error.fields.map((f) => `${f.field.replace(/^params\./, '').replace(/_/g, ' ')} ${f.message}`).join('; ');
      return { message: fields ? t('error.validation', { fields }) : t('error.generic', { detail: error.detail }) };
    }
    case 'invalid_credentials':
      return { message: t('error.credentials'), action: { label: t('error.forgot'), href: '/forgot-password' } };
    case 'email_taken':
      return { message: t('error.emailTaken'), action: { label: t('error.signInInstead'), href: '/sign-in' } };
    case 'invalid_messenger_login':
      return { message: t('error.telegramLogin'), action: { label: t('auth.backToSignIn'), href: '/sign-in' } };
    case 'invalid_identity_token':
      return { message: t('error.identityToken'), action: { label: t('auth.backToSignIn'), href: '/sign-in' } };
    case 'identity_conflict':
      return { message: t('error.identityConflict'), action: { label: t('auth.signIn'), href: '/sign-in' } };
    case 'invalid_reset_token':
      return { message: t('error.resetToken'), action: { label: t('error.newLink'), href: '/forgot-password' } };
    case 'not_authenticated':
    case 'invalid_token':
      return { message: t('error.session'), action: { label: t('auth.signIn'), href: '/sign-in' } };
    case 'not_found':
      return { message: t('error.notFound') };
    case 'wrong_password':
      return { message: t('error.wrongPassword') };
    case 'limit_reached':
      return { message: t('error.keyLimit') };
    case 'feature_disabled':
      return { message: t(context === 'checkout' ? 'error.checkoutDisabled' : 'error.disabled') };
    case 'redemption_code_invalid':
      return { message: t('error.codeInvalid') };
    case 'redemption_code_expired':
    case 'redemption_code_spent':
      return { message: t('error.codeUsed') };
    case 'redemption_code_already_redeemed':
      return { message: t('error.codeAgain') };
    case 'plan_downgrade_not_allowed':
      return { message: t('error.downgrade') };
    case 'payment_provider_error':
      return { message: t('error.paymentProvider') };
    default:
      if (error.status >= 500) return { message: t('error.server', { id: String(error.body.error_id ?? error.status) }) };
      return { message: t('error.generic', { detail: error.detail.replace(/\.$/, '') }) };
  }
}
