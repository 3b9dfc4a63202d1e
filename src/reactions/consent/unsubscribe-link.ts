/**
 * The unsubscribe link of a message: `<PUBLIC_URL>/unsubscribe/<token>`, one per contact, org and topic.
 * The token is the three sealed with AES-256-GCM under a key derived from the service's master key
 * (webhook-signing.ts): nobody can make one for another contact or org, change one, or read the e-mail
 * address out of it (a link is forwarded and logged by mail systems). A token that does not open is just
 * "not a valid link": the answer says nothing of why.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { ALL_TOPIC } from './consent-store.js';

export interface UnsubscribeTarget {
  org: string;
  email: string;
  topic: string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** An e-mail (320) with an org and a topic, sealed and in base64url, stays far below this. */
export const MAX_TOKEN_CHARS = 1024;

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
