/** Access tokens: HS256 JWTs that live 15 minutes and name the session they belong to. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { jwtVerify, SignJWT } from 'jose';
import type { Clock } from '../clock';
import { randomToken } from './secrets';

export const ACCESS_TOKEN_TTL_SECONDS = 900;
const ISSUER = 'gensvc';

export interface AccessClaims {
  userId: number;
  sessionId: number;
}

export class AccessTokens {
  private readonly key: Uint8Array;

  constructor(
    secret: string,
    private readonly clock: Clock,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  async issue(claims: AccessClaims): Promise<string> {
    const now = Math.floor(this.clock().getTime() / 1000);
    return new SignJWT({ sid: claims.sessionId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(String(claims.userId))
      .setJti(crypto.randomUUID())
      .setIssuedAt(now)
      .setExpirationTime(now + ACCESS_TOKEN_TTL_SECONDS)
      .sign(this.key);
  }

  /** The claims, or null for any token that is not ours, is malformed or has expired. */
  async verify(token: string): Promise<AccessClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        issuer: ISSUER,
        algorithms: ['HS256'],
        currentDate: this.clock(),
      });
      const userId = Number(payload.sub);
      const sessionId = Number(payload.sid);
      if (!Number.isInteger(userId) || !Number.isInteger(sessionId)) return null;
      return { userId, sessionId };
    } catch {
      return null;
    }
  }
}

/**
 * The signing secret: JWT_SECRET when set; otherwise (embedded mode) one generated on first boot
 * and kept in DATA_DIR so sessions survive restarts.
 */
export function resolveJwtSecret(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  const file = path.join(dataDir, 'jwt-secret');
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, randomToken(48), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return fs.readFileSync(file, 'utf8').trim();
}
