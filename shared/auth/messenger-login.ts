/**
 * Telegram Login Widget: the data-check-string is every received field but `hash`, as sorted
 * `key=value` lines; the secret key is SHA-256 of the bot token; the hash is the hex HMAC-SHA-256.
 */
import crypto from 'node:crypto';
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { Identity, User } from '../db/entities';
import { AppError } from '../errors';
import type { Users } from '../accounts/users';
import { constantTimeEqual } from './secrets';
import type { ClientInfo, Sessions } from './sessions';
import type { SignedIn } from './password-accounts';
import { isDuplicateKey } from '../db/errors';

export const MESSENGER_AUTH_MAX_AGE_SECONDS = 86_400;

export type WidgetData = Record<string, string | number | boolean>;

export function widgetHash(data: WidgetData, botToken: string): string {
  const checkString = Object.keys(data)
    .filter((k) => k !== 'hash')
    .sort()
    .map((k) => `${k}=${String(data[k])}`)
    .join('\n');
  const secret = crypto.createHash('sha256').update(botToken).digest();
  return crypto.createHmac('sha256', secret).update(checkString).digest('hex');
}

export interface MessengerProfile {
  telegramId: number;
  firstName: string;
  lastName?: string;
  username?: string;
  photoUrl?: string;
  languageCode?: string;
}

export class MessengerLogin {
  constructor(
    private readonly db: Database,
    private readonly users: Users,
    private readonly sessions: Sessions,
    private readonly clock: Clock,
    private readonly botToken: string | undefined,
  ) {}

  get enabled(): boolean {
    return this.botToken !== undefined;
  }

  /** The bot's numeric id (the token's part before the colon): what oauth.telegram.org is given as `bot_id`. */
  get botId(): number | null {
    const match = /^(\d+):/.exec(this.botToken ?? '');
    return match ? Number(match[1]) : null;
  }

  /** Checks the widget data; throws `invalid_messenger_login` for a bad hash or stale `auth_date`. */
  verify(data: WidgetData): void {
    if (!this.botToken) throw new AppError('feature_disabled', { detail: 'Messenger login is not configured on this server' });
    const given = typeof data.hash === 'string' ? data.hash.toLowerCase() : '';
    if (!constantTimeEqual(given, widgetHash(data, this.botToken))) throw new AppError('invalid_messenger_login');
    const authDate = Number(data.auth_date);
    const age = this.clock().getTime() / 1000 - authDate;
    if (!Number.isFinite(authDate) || age > MESSENGER_AUTH_MAX_AGE_SECONDS || age < -300) {
      throw new AppError('invalid_messenger_login', { detail: 'Messenger login data has expired; sign in again' });
    }
  }

  /** The account of this Telegram user, created (`free`, no e-mail) on first contact. */
  async findOrCreateUser(profile: MessengerProfile): Promise<{ user: User; isNew: boolean }> {
    const subject = String(profile.telegramId);
    const name = [profile.firstName, profile.lastName].filter(Boolean).join(' ').trim() || profile.username || `user${subject}`;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.db.transaction(async (em) => {
          const identity = await em.getRepository(Identity).findOneBy({ kind: 'messenger', subject });
          if (identity) {
            const user = await em.getRepository(User).findOneByOrFail({ id: identity.userId });
            if (profile.username !== undefined && user.messengerUsername !== profile.username) {
              await em.getRepository(User).update({ id: user.id }, { messengerUsername: profile.username, updatedAt: this.clock() });
              user.messengerUsername = profile.username;
            }
            return { user, isNew: false };
          }
          const user = await this.users.create(em, {
            name: name.slice(0, 200),
            email: null,
            messengerUsername: profile.username ?? null,
            avatarUrl: profile.photoUrl ?? null,
            identity: { kind: 'messenger', subject },
          });
          if (profile.languageCode?.startsWith('ru')) {
            await em.getRepository(User).update({ id: user.id }, { language: 'ru' });
            user.language = 'ru';
          }
          return { user, isNew: true };
        });
      } catch (error) {
        // Two first contacts at once: the unique identity index lets one create; the other reads it.
        if (attempt === 0 && isDuplicateKey(error)) continue;
        throw error;
      }
    }
  }

  async login(data: WidgetData, client: ClientInfo): Promise<SignedIn> {
    this.verify(data);
    const { user } = await this.findOrCreateUser({
      telegramId: Number(data.id),
      firstName: String(data.first_name ?? ''),
      lastName: data.last_name === undefined ? undefined : String(data.last_name),
      username: data.username === undefined ? undefined : String(data.username),
      photoUrl: data.photo_url === undefined ? undefined : String(data.photo_url),
    });
    const started = await this.db.transaction((em) => this.sessions.start(em, user.id, client));
    return { user, ...started };
  }
}
