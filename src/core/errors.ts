/**
 * The one error catalog. Every error a client can see has a stable snake_case `code` (its key here),
 * an HTTP status and a title; they reach clients as RFC 9457 problem+json (see http/problem.ts).
 * test/core/errors.test.ts checks every code is unique, snake_case and documented in the README.
 */
export const errorCatalog = {
  invalid_json: { status: 400, title: 'Body is not valid JSON' },
  invalid_request: { status: 400, title: 'Request is invalid' },
  invalid_cursor: { status: 400, title: 'Paging cursor not valid for this list' },
  json_too_deep: { status: 400, title: 'JSON body nested too deeply' },
  invalid_credentials: { status: 401, title: 'Unknown partner or wrong secret' },
  invalid_admin_key: { status: 401, title: 'Missing or wrong admin key' },
  not_found: { status: 404, title: 'Not found' },
  org_not_found: { status: 404, title: 'No such org' },
  org_exists: { status: 409, title: 'An org with this slug already exists' },
  schema_violation: { status: 412, title: 'Event rejected' },
  message_rejected: { status: 400, title: 'Tracking message rejected' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported content type' },
  internal_error: { status: 500, title: 'Internal error' },
  log_unavailable: { status: 503, title: 'Event log unavailable' },
  not_ready: { status: 503, title: 'Not ready to serve' },
  unhealthy: { status: 503, title: 'The process cannot recover without a restart' },
  log_outcome_unknown: { status: 503, title: 'The event log did not confirm the write in time' },
  control_unavailable: { status: 503, title: 'The control plane is out of reach' },
  invalid_token: { status: 401, title: 'Missing, malformed, unknown, revoked or expired token' },
  audience_api_not_enabled: { status: 403, title: 'The Audience API is not enabled for this org' },
  rate_limited: { status: 429, title: 'Too many requests' },
  token_pool_full: { status: 409, title: 'The org already has the maximum number of active tokens' },
  token_ambiguous: { status: 409, title: 'More than one active token matches' },
  token_not_found: { status: 404, title: 'No such token' },
  invalid_identity: { status: 400, title: 'Identity missing, malformed or unsupported' },
  invalid_fields: { status: 400, title: 'Unknown or non-content fields requested' },
  contact_not_found: { status: 404, title: 'No such contact' },
  profile_not_current: { status: 409, title: 'The profile does not reflect that event yet' },
  not_acceptable: { status: 406, title: 'JSON is not an acceptable response type' },
  invalid_trigger: { status: 422, title: 'Trigger or segment SQL refused' },
  trigger_not_found: { status: 404, title: 'No such trigger or segment' },
  trigger_query_failed: { status: 422, title: 'The query failed while running' },
  query_budget_exceeded: { status: 422, title: 'The query used up its time or memory budget' },
  query_file_refused: { status: 409, title: 'The query file cannot be written where QUERIES_DIR has it' },
  invalid_flow: { status: 422, title: 'Flow definition refused' },
  invalid_plan: { status: 422, title: 'Tracking plan refused' },
  plan_not_found: { status: 404, title: 'No such tracking plan' },
  flow_not_found: { status: 404, title: 'No such flow' },
  flow_exists: { status: 409, title: 'A flow with this id already exists' },
  flow_archived: { status: 409, title: 'The flow was archived' },
  trigger_in_use: { status: 409, title: 'Flows name the trigger or segment' },
  flow_not_triggered: { status: 409, title: 'A scheduled or recurring flow sends at its schedule, not by runs' },
  topic_not_found: { status: 404, title: 'No such subscription topic' },
  topic_in_use: { status: 409, title: 'The topic cannot be deleted' },
  contact_suppressed: { status: 409, title: 'The contact was erased with suppress: it cannot be subscribed' },
  unsubscribe_link_invalid: { status: 404, title: 'Not a valid unsubscribe link' },
  erasure_not_found: { status: 404, title: 'No such erasure' },
  shard_unavailable: { status: 503, title: 'The storage shard that owns the org did not answer' },
  shard_answer_too_large: { status: 502, title: "The owning shard's answer is too large to relay" },
  compaction_behind: { status: 503, title: 'Compaction is too far behind the log for a complete backup' },
  backup_in_progress: { status: 409, title: 'A backup of this process is already being taken' },
  no_org_databases: { status: 409, title: 'This process keeps no org databases' },
  sandbox_busy: { status: 503, title: 'No capacity to run trigger or segment SQL now' },
  sandbox_paused: { status: 503, title: "The org's trigger and segment SQL is paused after a runaway query" },
  storage_unavailable: { status: 503, title: 'The storage process is restarting' },
  profiles_behind: { status: 503, title: 'Profiles are behind the events acknowledged before this decision' },
  org_unavailable: { status: 503, title: "The org's database cannot be opened" },
  method_not_allowed: { status: 405, title: 'The path does not answer this method' },
  request_timeout: { status: 408, title: 'The request was not received in time' },
  uri_too_long: { status: 414, title: 'The URL is too long' },
  headers_too_large: { status: 431, title: 'The request headers are too large' },
  backup_file_refused: { status: 409, title: 'A file to back up is not a regular file inside DATA_DIR' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof errorCatalog;

export interface ProblemDetail {
  path: string;
  message: string;
}

/** A quarantine row's `errors` (JSON text of ProblemDetail[]): the first `max`, none when it is not that. */
export function parseProblemDetails(text: string, max = 20): ProblemDetail[] {
  try {
    const errors = JSON.parse(text) as unknown;
    return Array.isArray(errors) ? (errors as ProblemDetail[]).slice(0, max) : [];
  } catch {
    return [];
  }
}

/** An expected failure that becomes a problem+json answer. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly detail?: string,
    /** Extra problem members (e.g. `errors`), headers to set, and a status where an org setting picks it. */
    readonly extra: { members?: Record<string, unknown>; headers?: Record<string, string>; status?: number } = {},
    options?: { cause?: unknown },
  ) {
    super(detail ?? errorCatalog[code].title, options);
    this.name = 'AppError';
    this.status = extra.status ?? errorCatalog[code].status;
  }
}
