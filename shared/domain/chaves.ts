// API key tokens (docs/decisions/0007-keys-scopes-and-permissions.md): chv_ + 8-character public
// prefix + _ + 32 random bytes in base64url. Only the SHA-256 of the whole token is stored.
import { createHash, randomBytes } from 'node:crypto';

const PREFIX_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const TOKEN_FORMAT = /^chv_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{43}$/;

export type NovoToken = { token: string; prefixo: string; hash: Buffer };

export function gerarToken(): NovoToken {
  const prefixo = Array.from(randomBytes(8), (b) => PREFIX_ALPHABET[b % PREFIX_ALPHABET.length]).join('');
  const token = `chv_${prefixo}_${randomBytes(32).toString('base64url')}`;
  return { token, prefixo, hash: hashToken(token) };
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The token in an Authorization header value, or null when it is missing or malformed. */
export function tokenDoCabecalho(authorization: string | undefined): string | null {
  if (!authorization) return null;
  const match = /^Bearer +(\S+) *$/i.exec(authorization);
  const token = match?.[1];
  return token && TOKEN_FORMAT.test(token) ? token : null;
}
