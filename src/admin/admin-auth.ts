/** `Authorization: Bearer <ADMIN_KEY>` on every /admin/v1 route, compared in constant time. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { bearerToken } from '../http/bearer.js';
import { matchesHash } from '../orgs/secrets.js';

export function adminAuth(adminKeyHash: string) {
  return (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
    const key = bearerToken(request.headers.authorization) ?? '';
    if (!matchesHash(key, adminKeyHash)) {
      done(new AppError('invalid_admin_key', 'Send Authorization: Bearer <ADMIN_KEY>.', {
        headers: { 'WWW-Authenticate': 'Bearer realm="audience-admin"' },
      }));
      return;
    }
    done();
  };
}
