/**
 * The raw bytes of a request body, up to a limit, read before Fastify parses anything: a relayed body
 * goes to the shard exactly as the client sent it (CSV, NDJSON, JSON, any encoding).
 */
import type { IncomingMessage } from 'node:http';

export type BodyRead = { outcome: 'read'; body: Buffer } | { outcome: 'too_large' };

export function readBody(raw: IncomingMessage, limit: number): Promise<BodyRead> {
  // A declared length over the limit is refused unread; Node discards the body after the answer.
  if (Number(raw.headers['content-length'] ?? 0) > limit) return Promise.resolve({ outcome: 'too_large' });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes <= limit) {
        chunks.push(chunk);
        return;
      }
      // A chunked body that grows past the limit: stop keeping it, but keep reading (and dropping) it,
      // since Node only discards a body nobody started reading, and the answer must still get out.
      cleanup();
      raw.resume();
      resolve({ outcome: 'too_large' });
    };
    const onEnd = (): void => {
      cleanup();
      resolve({ outcome: 'read', body: Buffer.concat(chunks, bytes) });
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const cleanup = (): void => {
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('error', onError);
    };
    raw.on('data', onData);
    raw.on('end', onEnd);
    raw.on('error', onError);
  });
}
