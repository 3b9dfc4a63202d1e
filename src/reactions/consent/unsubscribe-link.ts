/**
 * The unsubscribe link of a message: `<PUBLIC_URL>/unsubscribe/<token>`, one per contact, org and topic.
 * The token is the three sealed with AES-256-GCM under a key derived from the service's master key
 * (webhook-signing.ts): nobody can make one for another contact or org, change one, or read the e-mail
 * address out of it (a link is forwarded and logged by mail systems). A token that does not open is just
 * "not a valid link": the answer says nothing of why.
 *
 * The token grows with the address: 99 characters for `carol.67d5f8@example.com` in org `oaa65fcd3`, up to
 * 616 for the longest values the schemas allow. The router takes that (MAX_PATH_PARAM_CHARS) rather than
 * the token being made compact (a random id stored per contact and topic): every link already delivered
 * works as it is — those over 100 characters answered 414 before (issue 37) — and a link stays a pure
 * function of what it names: no write per message, no table for erasure and backups to cover, any
 * process serving the org opens it. The cost is length: a List-Unsubscribe line (folded before the `<`)
 * stays within RFC 5322's 998 characters because PUBLIC_URL has at most 366 (schemas/config.schema.json).
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { MAX_PATH_PARAM_CHARS } from '../../core/route-params.js';
import { ALL_TOPIC } from './consent-store.js';

export interface UnsubscribeTarget {
  org: string;
  email: string;
  topic: string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
/**
 * The longest token the route takes: the router's limit. The longest a link carries is 616 characters
 * (a 40-character org, a 320-character address, a 64-character topic; core/route-params.ts): the token
 * grows with the address, and a link has to fit every address a flow may send to (issue 37).
 */
export const MAX_TOKEN_CHARS = MAX_PATH_PARAM_CHARS;

export class UnsubscribeLinks {
  private readonly key: Buffer;

  constructor(
    masterKey: string,
    private readonly publicUrl: string,
  ) {
    this.key = createHmac('sha256', masterKey).update('audience-unsubscribe-v1').digest();
  }

  /** The link a flow's message carries to `email`: for the flow's topic (`all` when it names none); null for a transactional flow. */
  forFlow(org: string, flow: { topic?: string; transactional?: boolean }, email: string): string | null {
    return flow.transactional ? null : this.url({ org, email, topic: flow.topic ?? ALL_TOPIC });
  }

  url(target: UnsubscribeTarget): string {
    return `${this.publicUrl.replace(/\/+$/, '')}/unsubscribe/${this.token(target)}`;
  }

  token(target: UnsubscribeTarget): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const sealed = Buffer.concat([cipher.update(JSON.stringify([target.org, target.email, target.topic]), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /** What the token names, or undefined for anything that is not a token this service made. */
  open(token: string): UnsubscribeTarget | undefined {
    if (token.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
    const bytes = Buffer.from(token, 'base64url');
    if (bytes.length <= IV_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      const value: unknown = JSON.parse(plain);
      if (!Array.isArray(value) || value.length !== 3 || !value.every((v) => typeof v === 'string')) return undefined;
      const [org, email, topic] = value as [string, string, string];
      return { org, email, topic };
    } catch {
      return undefined;
    }
  }
}
