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

/**
 * Where records are encoded before their bytes are copied out; grown to the largest record so far.
 * avsc's `toBuffer` encodes into a 1 KB buffer of its own and, when the value does not fit (every record
 * of more than one event), encodes it all again into one of the right size: twice the work, and a
 * second copy for the version byte. Encoding is synchronous, so one buffer serves every call.
 */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);

export function encodeRecord(entries: LogEntry[]): Uint8Array {
  const record = { entries };
  let end = version2.encode(record, scratch, 1);
  if (end < 0) {
    // `encode` answers minus the bytes missing.
    scratch = Buffer.allocUnsafeSlow(Math.max(2 * scratch.length, scratch.length - end));
    end = version2.encode(record, scratch, 1);
  }
  scratch[0] = VERSION_2;
  return Buffer.from(scratch.subarray(0, end));
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
