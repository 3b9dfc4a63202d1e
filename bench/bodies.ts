/**
 * Request bodies for the load generator: realistic custom events with a unique messageId per event,
 * identities varied over a pool (clientId + e-mail), and sentAt = now.
 *
 * Bodies are built once as a byte template with fixed-width placeholders; each request copies the
 * template and writes digits into the placeholders. That keeps the generator's own CPU cost per request
 * small and the same for the bare baseline and the service (both get these exact bodies).
 */

/** Distinct identities (clientId ↔ e-mail) cycled over. */
export const IDENTITIES = 20_000;

const TS = '\u0001'.repeat(13); // sentAt, epoch ms
const SEQ = '\u0002'.repeat(10); // request number (part of messageId)
const ID = '\u0003'.repeat(6); // identity number (clientId and e-mail)

/** The placeholders of a template's text (singleEventText), for load generators that fill them in themselves (bench/wrk.ts). */
export const PLACEHOLDERS = { sentAt: TS, sequence: SEQ, identity: ID } as const;

export interface Credentials {
  partnerId: string;
  partnerSecret: string;
  /** For the Segment-compatible tracking API (absent when only partner credentials are known). */
  writeKey?: string;
}

/** One event body without its opening/closing braces' credentials; `member` is baked into messageId. */
function eventMembers(tag: string, member: number): string {
  const m = String(member).padStart(4, '0');
  return (
    `"clientId":"c-${ID}",` +
    `"sentAt":${TS},` +
    `"type":"track",` +
    `"event":"custom",` +
    `"messageId":"${tag}-${SEQ}-${m}",` +
    `"context":{"library":{"name":"audience-js","version":"1.4.2"},` +
    `"page":{"url":"https://shop.example.com/checkout/confirmation?ref=newsletter"},` +
    `"userAgent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"},` +
    `"traits":{"email":"User-${ID}@Example.com","firstName":"Ada","lastName":"Lovelace"},` +
    `"properties":{"eventName":"booking_completed","properties":{"city":"Lisbon","nights":3,"value":412.5,"currency":"EUR"}}`
  );
}

/** The text of a /http/v1/collect body with its PLACEHOLDERS (BodyTemplate.single fills them per request). */
export function singleEventText(credentials: Credentials, tag: string): string {
  const creds = `"partnerId":${JSON.stringify(credentials.partnerId)},"partnerSecret":${JSON.stringify(credentials.partnerSecret)}`;
  return `{${creds},${eventMembers(tag, 0)}}`;
}

/** The text of a /http/v1/batch body of `size` members with its PLACEHOLDERS (BodyTemplate.batch). */
export function batchText(credentials: Credentials, tag: string, size: number): string {
  const creds = `"partnerId":${JSON.stringify(credentials.partnerId)},"partnerSecret":${JSON.stringify(credentials.partnerSecret)}`;
  const members = Array.from({ length: size }, (_, i) => `{${eventMembers(tag, i)}}`);
  return `{${creds},"batch":[${members.join(',')}]}`;
}

interface Slot {
  offset: number;
  kind: 1 | 2 | 3;
  member: number;
}

export class BodyTemplate {
  private readonly base: Buffer;
  private readonly slots: Slot[] = [];
  private sequence = 0;

  private constructor(
    text: string,
    /** Events per body (1 for /collect). */
    readonly events: number,
  ) {
    this.base = Buffer.from(text, 'latin1');
    let idCount = 0;
    for (let i = 0; i < this.base.length; ) {
      const byte = this.base[i]!;
      if (byte >= 1 && byte <= 3) {
        const kind = byte as 1 | 2 | 3;
        // clientId and e-mail come in that order, twice per member.
        const member = kind === 3 ? Math.floor(idCount++ / 2) : 0;
        this.slots.push({ offset: i, kind, member });
        i += kind === 1 ? TS.length : kind === 2 ? SEQ.length : ID.length;
      } else {
        i++;
      }
    }
  }

  /** A single event as POSTed to /http/v1/collect. */
  static single(credentials: Credentials, tag: string): BodyTemplate {
    return new BodyTemplate(singleEventText(credentials, tag), 1);
  }

  /** A /http/v1/batch body of `size` members (events without credentials). */
  static batch(credentials: Credentials, tag: string, size: number): BodyTemplate {
    return new BodyTemplate(batchText(credentials, tag, size), size);
  }

  /**
   * A Segment /v1/batch body of `size` messages carrying what BodyTemplate.batch's members carry (the same
   * ids, traits, context and properties), as analytics-node sends them; the write key goes in a header.
   * sentAt is epoch ms (analytics-node sends an ISO string; both are read).
   */
  static segmentBatch(tag: string, size: number): BodyTemplate {
    const members = Array.from({ length: size }, (_, i) => {
      const m = String(i).padStart(4, '0');
      return (
        `{"type":"track","anonymousId":"c-${ID}","sentAt":${TS},"event":"Booking Completed","messageId":"${tag}-${SEQ}-${m}",` +
        `"context":{"library":{"name":"analytics-node","version":"2.1.0"},` +
        `"page":{"url":"https://shop.example.com/checkout/confirmation?ref=newsletter"},` +
        `"userAgent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",` +
        `"traits":{"email":"User-${ID}@Example.com","firstName":"Ada","lastName":"Lovelace"}},` +
        `"properties":{"city":"Lisbon","nights":3,"value":412.5,"currency":"EUR"}}`
      );
    });
    return new BodyTemplate(`{"batch":[${members.join(',')}]}`, size);
  }

  get bytes(): number {
    return this.base.length;
  }

  /** Bodies handed out so far (each with a new request number, so new messageIds). */
  get issued(): number {
    return this.sequence;
  }

  next(): Buffer {
    const n = this.sequence++;
    const body = Buffer.allocUnsafe(this.base.length);
    this.base.copy(body);
    const ts = String(Date.now());
    const seq = String(n).padStart(SEQ.length, '0');
    for (const slot of this.slots) {
      if (slot.kind === 1) body.write(ts, slot.offset, 'latin1');
      else if (slot.kind === 2) body.write(seq, slot.offset, 'latin1');
      else body.write(String((n * this.events + slot.member) % IDENTITIES).padStart(ID.length, '0'), slot.offset, 'latin1');
    }
    return body;
  }
}
