/** Building blocks every page uses: the page title, error notices, the confirmation dialog. */
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { explain } from '../errors';
import type { ErrorContext } from '../errors';
import { useI18n } from '../i18n';
import { Link } from '../router';

let firstTitle = true;

/**
 * The page's h1; it names the tab and, after a navigation (not on the first load), takes the
 * focus so a screen reader announces the new page and Tab starts from its top.
 */
export function PageTitle({ children }: { children: string }): JSX.Element {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${children} · gensvc`;
    if (firstTitle) firstTitle = false;
    else heading.current?.focus();
  }, [children]);
  return (
    <h1 ref={heading} tabIndex={-1}>
      {children}
    </h1>
  );
}

/** A refusal of the API, explained, with the link that fixes it. */
export function ErrorNotice({ error, context }: { error: unknown; context?: ErrorContext }): JSX.Element | null {
  const i18n = useI18n();
  if (error === null || error === undefined) return null;
  const { message, action } = explain(error, i18n, context);
  return (
    <div class="notice error" role="alert">
      <span>{message}</span>
      {action ? (
        <>
          {' '}
          <Link href={action.href}>{action.label}</Link>
        </>
      ) : null}
    </div>
  );
}

export function Notice({ children, tone = 'info' }: { children: ComponentChildren; tone?: 'info' | 'success' }): JSX.Element {
  return (
    <div class={`notice ${tone}`} role="status">
      {children}
    </div>
  );
}

/** A modal question (the platform's <dialog>: focus is trapped and Escape cancels). */
export function ConfirmDialog(props: { open: boolean; message: string; confirmLabel: string; onConfirm: () => void; onCancel: () => void }): JSX.Element {
  const { t } = useI18n();
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (props.open && !element.open) element.showModal();
    if (!props.open && element.open) element.close();
  }, [props.open]);
  return (
    <dialog ref={dialog} aria-labelledby="confirm-text" onCancel={props.onCancel} onClose={props.onCancel}>
      <p id="confirm-text">{props.message}</p>
      <div class="actions">
        <button type="button" onClick={props.onCancel} autofocus>
          {t('common.cancel')}
        </button>
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** A polite "loading" line while a page waits for its data. */
export function Loading(): JSX.Element {
  const { t } = useI18n();
  return (
    <p class="muted" role="status">
      {t('app.loading')}
    </p>
  );
}
