// JWT bearer tokens (e.g. Kubernetes service-account or OIDC tokens), verified with jose against the issuer's
// key set (auth_jwks_url, fetched and cached, or auth_jwks_file, re-read on SIGHUP): signature, expiry, issuer,
// audience. Roles come from a claim (auth_jwt_roles_claim).
import { readFileSync } from 'node:fs';
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import type { Config } from '../config.ts';
import { AuthFileError } from './auth-tokens.ts';
import { isRole, type Role } from './roles.ts';

type KeySet = ReturnType<typeof createLocalJWKSet> | ReturnType<typeof createRemoteJWKSet>;

export type JwtOutcome =
  | { ok: true; subject: string; roles: Role[] }
  | { ok: false; reason: 'jwt_malformed' | 'jwt_signature' | 'jwt_expired' | 'jwt_claims'; detail: string }
  | { ok: false; reason: 'jwks_unavailable'; detail: string };

/** Compact JWS: three base64url parts. Static tokens (base64url, no dots) never look like one. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

function claimAt(payload: JWTPayload, path: string): unknown {
  let node: unknown = payload;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** An array of names or a space separated string (OAuth scope style); names that are not Berth roles are ignored. */
function rolesFromClaim(value: unknown): Role[] {
  const names = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/[\s,]+/) : [];
  return [...new Set(names.filter((n): n is string => typeof n === 'string' && isRole(n)))] as Role[];
}

export class JwtVerifier {
  readonly #config: Config;
  readonly #now: () => number;
  #keys: KeySet;

  constructor(config: Config, now: () => number) {
    this.#config = config;
    this.#now = now;
    this.#keys = config.auth_jwks_url
      ? createRemoteJWKSet(new URL(config.auth_jwks_url), { timeoutDuration: 5000, cooldownDuration: 30_000 })
      : JwtVerifier.#readFile(config.auth_jwks_file!);
  }

  get source(): string {
    return this.#config.auth_jwks_url ?? this.#config.auth_jwks_file!;
  }

  static #readFile(file: string): KeySet {
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new AuthFileError(`auth_jwks_file ${file} ${code ? `cannot be read (${code})` : 'is not valid JSON'}`);
    }
    try {
      return createLocalJWKSet(json as JSONWebKeySet);
    } catch (err) {
      throw new AuthFileError(`auth_jwks_file ${file} is not a JSON Web Key Set: ${(err as Error).message}`);
    }
  }

  /** Re-reads auth_jwks_file (the URL form refreshes itself); throws AuthFileError and keeps the keys in force. */
  reload(): boolean {
    if (!this.#config.auth_jwks_file) return false;
    this.#keys = JwtVerifier.#readFile(this.#config.auth_jwks_file);
    return true;
  }

  async verify(token: string): Promise<JwtOutcome> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.#keys, {
        issuer: this.#config.auth_jwt_issuer!,
        audience: this.#config.auth_jwt_audience!,
        currentDate: new Date(this.#now()),
        requiredClaims: ['sub', 'exp'],
      }));
    } catch (err) {
      return classify(err);
    }
    return { ok: true, subject: payload.sub!, roles: rolesFromClaim(claimAt(payload, this.#config.auth_jwt_roles_claim)) };
  }
}

function classify(err: unknown): JwtOutcome {
  const code = (err as { code?: string }).code;
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return { ok: false, reason: 'jwt_expired', detail: 'The JWT has expired.' };
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const claim = (err as { claim?: string }).claim ?? 'a claim';
      return { ok: false, reason: 'jwt_claims', detail: `The JWT's ${claim} claim is not accepted.` };
    }
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return { ok: false, reason: 'jwt_signature', detail: 'The JWT\'s signature does not verify against the issuer\'s keys.' };
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return { ok: false, reason: 'jwt_malformed', detail: 'The JWT is malformed.' };
    default:
      // The key set could not be fetched (timeout, network, bad answer): not the caller's fault.
      return { ok: false, reason: 'jwks_unavailable', detail: 'The JWT issuer\'s key set cannot be fetched; retry later.' };
  }
}
