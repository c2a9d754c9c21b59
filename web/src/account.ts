/** The signed-in account as the pages share it: the user, a reload after anything that changes the balance. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Language } from './i18n';
import type { User } from './types';

export interface Account {
  user: User;
  /** Reads the user again (balance, usage) and re-renders everything that shows it. */
  reload(): Promise<void>;
  /** Applies a language at once (Settings saves it on the account). */
  setLanguage(lang: Language): void;
  signOut(): Promise<void>;
}

export const AccountContext = createContext<Account | null>(null);

export function useAccount(): Account {
  const account = useContext(AccountContext);
  if (!account) throw new Error('useAccount outside a signed-in page');
  return account;
}
