/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */
import type { BatchMember, PartnerId, PartnerSecret, WriteKey } from './event.js';
import type { EventContext } from './event-parts.js';

/**
 * A batch as POSTed to /http/v1/batch (SPEC 4.1): credentials once, then up to 2,500 event bodies. The envelope ($defs/envelope) is checked first and every member then on its own against event.schema.json#/$defs/batchMember, so each rejected member gets its own reasons (and quarantine row) while the batch stays atomic.
 */
export type BatchRequest = BatchEnvelope & {
  batch?: BatchMember[];
};

/**
 * The batch without its members' contents: what can be checked before looking at any member.
 *
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "envelope".
 */
export interface BatchEnvelope {
  partnerId: PartnerId;
  partnerSecret: PartnerSecret;
  writeKey?: WriteKey;
  context?: EventContext;
  /**
   * 2,500: SPEC 4.1's cap, with 500 KB per batch and 32 KB per event enforced on the body's size.
   *
   * @minItems 1
   * @maxItems 2500
   */
  batch: unknown[];
}
