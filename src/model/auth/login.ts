// What every login method shares: what the client sent, what a primary method proved, and what follows it
// (authenticate.ts runs the methods; ext-jwt.ts is one of them).
import type { Ctx } from '../context.js';

export interface AuthenticateInput {
  username?: string;
  password?: string;
  configTypes?: string[];
  envInfo?: Record<string, string>;
  sdkInfo?: Record<string, string>;
}

/** What a primary method proved: whose credential it was. */
export interface PrimaryAuth {
  identityId: string;
  authenticatorId: string;
  ipAddress: string;
  input: AuthenticateInput;
  isCertExtendable?: boolean;
  /** The request's bearer tokens: a JWT among them may be the second factor its auth policy requires (secondary.requireExtJwtSigner). */
  bearers?: string[];
}

/** What follows a primary method that succeeded: a legacy API session (openSession), or an OIDC request's step. */
export type Finish<T> = (ctx: Ctx, o: PrimaryAuth) => Promise<T>;
