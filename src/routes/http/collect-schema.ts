/** What /http/v1/collect and /http/v1/batch declare for the document (SPEC 4); the handlers validate the body. */
import type { ErrorCode } from '../../core/errors.js';
import { object, operationSchema, schemaRef, validatedAs } from '../../openapi/route-schema.js';

const ERRORS: ErrorCode[] = ['invalid_json', 'json_too_deep', 'invalid_request', 'invalid_credentials', 'schema_violation', 'payload_too_large', 'unsupported_media_type', 'log_unavailable', 'log_outcome_unknown'];

const MESSAGE_ID = { type: 'string', minLength: 1, description: 'The event\'s messageId: the one sent, or one the service made' };

export const collectSchema = operationSchema({
  tag: 'Partners',
  summary: 'Send one event (at most 32 KB)',
  description:
    'Answered once the event is durable in the log. A rejected event is kept in quarantine and answered 412 `schema_violation` ' +
    '(the first three reasons in `errors` and the first in `detail`; every reason with `context.debug: true`). A 503 `log_outcome_unknown` carries the `messageId` to retry with.',
  operationId: 'collectEvent',
  auth: 'partner',
  body: schemaRef('event'),
  ok: { status: 200, description: 'Durable in the log', schema: object({ messageId: MESSAGE_ID }) },
  errors: ERRORS,
});

export const batchSchema = operationSchema({
  tag: 'Partners',
  summary: 'Send up to 2,500 events (500 KB, 32 KB each) at once, atomically',
  description:
    'All or nothing: when any member is invalid, none is stored as an event, every member goes to quarantine, and the answer is 412 ' +
    '`schema_violation` (the first three reasons in `errors`, every reason with `context.debug: true`, each `path` starting with `/batch/<index>`). ' +
    'A 503 `log_outcome_unknown` carries the `messageIds` to retry with.',
  operationId: 'collectBatch',
  auth: 'partner',
  body: schemaRef('batch'),
  ok: { status: 200, description: 'Every event durable in the log; the messageIds in the order of `batch`', schema: object({ messageIds: { type: 'array', minItems: 1, maxItems: 2500, items: MESSAGE_ID } }) },
  errors: ERRORS,
});

/** The body is checked by the handler: a rejected event is quarantined and answered `schema_violation`. */
export const collectValidation = validatedAs({ body: null });
