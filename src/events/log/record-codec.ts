/**
 * Avro encoding of log records (a micro-batch of entries per record, see group-commit.ts).
 *
 * Two layouts, told apart by the first byte, so logs written before entries carried their facts are read
 * as they are (and a rolled-back service reads nothing it would misread: it fails on the marker):
 * - version 1: the Avro record alone. It starts with the entries array's block count, a zig-zag varint of
 *   a count ≥ 0, whose first byte is always even.
 * - version 2: the byte 0x01 (odd, never a version 1 start), then the Avro record whose entries carry
 *   `facts` (event-facts.ts).
 */
import avro from 'avsc';
import type { LogEntry } from './types.js';

const VERSION_2 = 0x01;

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
const version2 = recordType([...entryFields, { name: 'facts', type: ['null', factsType], default: null }]);

export function encodeRecord(entries: LogEntry[]): Uint8Array {
  const body = version2.toBuffer({ entries });
  const payload = Buffer.allocUnsafe(body.length + 1);
  payload[0] = VERSION_2;
  body.copy(payload, 1);
  return payload;
}

export function decodeRecord(payload: Uint8Array): LogEntry[] {
  const bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (bytes[0] === VERSION_2) return (version2.fromBuffer(bytes.subarray(1)) as { entries: LogEntry[] }).entries;
  if (bytes.length > 0 && bytes[0]! % 2 === 1) throw new Error(`log record of an unknown layout (first byte ${bytes[0]})`);
  const { entries } = version1.fromBuffer(bytes) as { entries: Array<Omit<LogEntry, 'facts'>> };
  return entries.map((entry) => ({ ...entry, facts: null }));
}

/** A version 1 record, as services wrote them before entries carried facts (for tests of reading old logs). */
export function encodeVersion1Record(entries: LogEntry[]): Uint8Array {
  return version1.toBuffer({ entries: entries.map(({ facts: _facts, ...entry }) => entry) });
}
