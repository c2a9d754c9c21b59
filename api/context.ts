import type { ParameterizedContext } from 'koa';
import type Router from '@koa/router';
import type { Container } from '../shared/container';
import type { User } from '../shared/db/entities';
import type { Plan } from '../shared/plans';

/** Who is calling: set by the auth middleware. */
export interface Caller {
  user: User;
  /** The plan in force (an expired paid plan counts as free). */
  plan: Plan;
  /** The session of an access token; null when the caller used an API key. */
  sessionId: number | null;
  apiKeyId: number | null;
}

export interface AppState {
  caller?: Caller;
  requestId: string;
}

export interface AppCustom {
  container: Container;
}

export type AppContext = ParameterizedContext<AppState, AppCustom>;
export type AppRouter = Router<AppState, AppCustom>;

/** The caller, for handlers mounted behind `requireAuth`. */
export function callerOf(ctx: AppContext): Caller {
  if (!ctx.state.caller) throw new Error('handler mounted without requireAuth');
  return ctx.state.caller;
}
