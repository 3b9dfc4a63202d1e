/** Avro encoding of log records (a micro-batch of entries per record, see group-commit.ts). */
import avro from 'avsc';
import type { LogEntry } from './types.js';

const recordType = avro.Type.forSchema({
  type: 'record',
  name: 'LogRecord',
  namespace: 'audience.v1',
  fields: [
    {
      name: 'entries',
      type: {
        type: 'array',
        items: {
          type: 'record',
          name: 'LogEntry',
          fields: [
            { name: 'kind', type: { type: 'enum', name: 'EntryKind', symbols: ['event', 'rejected'] } },
            { name: 'org', type: 'string' },
            { name: 'environment', type: { type: 'enum', name: 'Environment', symbols: ['staging', 'production'] } },
            { name: 'messageId', type: 'string' },
            { name: 'receivedAt', type: 'long' },
            { name: 'body', type: 'string' },
            { name: 'code', type: ['null', 'string'], default: null },
            { name: 'errors', type: ['null', 'string'], default: null },
          ],
        },
      },
    },
  ],
});

export function encodeRecord(entries: LogEntry[]): Uint8Array {
  return recordType.toBuffer({ entries });
}

export function decodeRecord(payload: Uint8Array): LogEntry[] {
  const value = recordType.fromBuffer(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)) as {
    entries: LogEntry[];
  };
  return value.entries;
}
