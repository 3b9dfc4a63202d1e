/**
 * Avro encoding of log records (a micro-batch of entries per record, see group-commit.ts).
 *
 * Three layouts, told apart by the first byte, so logs written before are read as they are (and a
 * rolled-back service reads nothing it would misread: it fails on the marker):
 * - version 1: the Avro record alone. It starts with the entries array's block count, a zig-zag varint of
 *   a count ≥ 0, whose first byte is always even.
 * - version 2: the byte 0x01 (odd, never a version 1 start), then the Avro record whose entries carry
 *   `facts` (event-facts.ts).
 * - version 3: the byte 0x03, then the Avro record of version 2 with the texts of batches stored as they
 *   arrived (`batches`, events/collect/batch-text.ts) and, on each entry of one, its `batch` and `member`:
 *   where its body is made from when the record is read. Written only by a record that holds such a batch.
 */
import avro from 'avsc';
import { type Body, batchMemberEvent, storedBody } from './stored-body.js';
import type { LogEntry, StoredBatch } from './types.js';

const VERSION_2 = 0x01;
const VERSION_3 = 0x03;

const entryFields: avro.schema.RecordType['fields'] = [
  { name: 'kind', type: { type: 'enum', name: 'EntryKind', symbols: ['event', 'rejected'] } },
  { name: 'org', type: 'string' },
  { name: 'environment', type: { type: 'enum', name: 'Environment', symbols: ['staging', 'production'] } },
  { name: 'messageId', type: 'string' },
  { name: 'receivedAt', type: 'long' },
  { name: 'body', type: 'string' },
  { name: 'code', type: ['null', 'string'], default: null },
  { name: 'errors', type: ['null', 'string'], default: null },
];

const factsType: avro.schema.RecordType = {
  type: 'record',
  name: 'EventFacts',
  fields: [
    { name: 'eventType', type: { type: 'enum', name: 'EventType', symbols: ['track', 'identify', 'alias'] } },
    { name: 'eventName', type: 'string' },
    { name: 'clientId', type: 'string' },
    { name: 'traitEmail', type: ['null', 'string'] },
    { name: 'userId', type: ['null', 'string'] },
    { name: 'eventTime', type: 'long' },
    { name: 'clockSkewMs', type: ['null', 'long'] },
    { name: 'properties', type: 'string' },
    { name: 'requiresIdentity', type: 'boolean' },
    { name: 'previousId', type: ['null', 'string'] },
  ],
};

function recordType(fields: avro.schema.RecordType['fields']): avro.Type {
  return avro.Type.forSchema({
    type: 'record',
    name: 'LogRecord',
    namespace: 'audience.v1',
    fields: [{ name: 'entries', type: { type: 'array', items: { type: 'record', name: 'LogEntry', fields } } }],
  });
}

const version1 = recordType(entryFields);
const factsField = { name: 'facts', type: ['null', factsType], default: null };
const version2 = recordType([...entryFields, factsField]);
/**
 * `batch`: the index in `batches` of the text a member's body is made from, -1 for an entry that carries its
 * body; `member`: its place in that batch's `batch` array.
 */
const version3 = avro.Type.forSchema({
  type: 'record',
  name: 'LogRecordWithBatches',
  namespace: 'audience.v1',
  fields: [
    { name: 'batches', type: { type: 'array', items: 'bytes' } },
    {
      name: 'entries',
      type: {
        type: 'array',
        items: {
          type: 'record',
          name: 'LogEntryOfBatch',
          fields: [...entryFields, factsField, { name: 'batch', type: 'int', default: -1 }, { name: 'member', type: 'int', default: 0 }],
        },
      },
    },
  ],
});

interface WireEntry extends LogEntry {
  batch?: number;
  member?: number;
}

/**
 * Where records are encoded before their bytes are copied out; grown to the largest record so far.
 * avsc's `toBuffer` encodes into a 1 KB buffer of its own and, when the value does not fit (every record
 * of more than one event), encodes it all again into one of the right size: twice the work, and a
 * second copy for the version byte. Encoding is synchronous, so one buffer serves every call.
 */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);

export function encodeRecord(entries: LogEntry[]): Uint8Array {
  return entries.some((e) => e.batchPart) ? encode(version3, VERSION_3, withBatches(entries)) : encode(version2, VERSION_2, { entries });
}

function encode(type: avro.Type, version: number, record: object): Uint8Array {
  let end = type.encode(record, scratch, 1);
  if (end < 0) {
    // `encode` answers minus the bytes missing.
    scratch = Buffer.allocUnsafeSlow(Math.max(2 * scratch.length, scratch.length - end));
    end = type.encode(record, scratch, 1);
  }
  scratch[0] = version;
  return Buffer.from(scratch.subarray(0, end));
}

/** Each batch's text once; its members' entries point at it instead of carrying a body. */
function withBatches(entries: LogEntry[]): { batches: Buffer[]; entries: WireEntry[] } {
  const batches: StoredBatch[] = [];
  const wire = entries.map((e): WireEntry => {
    const part = e.batchPart;
    if (!part) return e;
    let batch = batches.lastIndexOf(part.batch);
    if (batch < 0) batch = batches.push(part.batch) - 1;
    // Written out, not spread: a spread of each entry cost more than the serializing it replaces.
    const { kind, org, environment, messageId, receivedAt, code, errors, facts } = e;
    return { kind, org, environment, messageId, receivedAt, body: '', code, errors, facts, batch, member: part.member };
  });
  return { batches: batches.map((b) => b.text), entries: wire };
}

export function decodeRecord(payload: Uint8Array): LogEntry[] {
  const bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (bytes[0] === VERSION_2) return (version2.fromBuffer(bytes.subarray(1)) as { entries: LogEntry[] }).entries;
  if (bytes[0] === VERSION_3) return withBodies(version3.fromBuffer(bytes.subarray(1)) as { batches: Buffer[]; entries: WireEntry[] });
  if (bytes.length > 0 && bytes[0]! % 2 === 1) throw new Error(`log record of an unknown layout (first byte ${bytes[0]})`);
  const { entries } = version1.fromBuffer(bytes) as { entries: Array<Omit<LogEntry, 'facts'>> };
  return entries.map((entry) => ({ ...entry, facts: null }));
}

/**
 * Each member's body made from its batch's text, as the collector makes a body (validate-batch-step.ts):
 * the text is what the collector parsed, less the secret, so it parses to the same members.
 */
function withBodies({ batches, entries }: { batches: Buffer[]; entries: WireEntry[] }): LogEntry[] {
  const parsed: Array<Body & { batch: Body[] }> = [];
  for (const entry of entries) {
    const { batch, member } = entry;
    if (batch === undefined || batch < 0) continue;
    const envelope = (parsed[batch] ??= JSON.parse(batches[batch]!.toString()) as Body & { batch: Body[] });
    entry.body = storedBody(batchMemberEvent(envelope, envelope.batch[member!]!), entry.messageId);
  }
  return entries;
}

/** A version 1 record, as services wrote them before entries carried facts (for tests of reading old logs). */
export function encodeVersion1Record(entries: LogEntry[]): Uint8Array {
  return version1.toBuffer({ entries: entries.map(({ facts: _facts, ...entry }) => entry) });
}
