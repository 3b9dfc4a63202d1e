/**
 * Parses an import body (CSV with a header row, or NDJSON) into contact rows and per-line errors.
 * A row is all or nothing: it is either taken whole or reported with its reason.
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { isEmailAddress, normalizeEmail } from '../../core/domain.js';

export const CONTACT_COLUMNS = ['first_name', 'last_name', 'user_id', 'address_city', 'address_state', 'address_country'] as const;
type ContactColumn = (typeof CONTACT_COLUMNS)[number];

export interface ContactRow {
  line: number;
  email: string;
  columns: Partial<Record<ContactColumn, string>>;
  custom: Record<string, unknown>;
}

export interface RowError {
  line: number;
  code: 'missing_email' | 'invalid_email' | 'invalid_row' | 'invalid_field_name';
  message: string;
}

export type ImportFormat = 'csv' | 'ndjson';

/** Custom column names become profile fields and content-field names. */
const FIELD_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const known = new Set<string>(['email_address', ...CONTACT_COLUMNS]);

export function parseContacts(format: ImportFormat, body: string): { rows: ContactRow[]; errors: RowError[] } {
  const records = format === 'csv' ? csvRecords(body) : ndjsonRecords(body);
  const rows: ContactRow[] = [];
  const errors: RowError[] = [];
  for (const record of records) {
    if ('error' in record) {
      errors.push({ line: record.line, code: 'invalid_row', message: record.error });
      continue;
    }
    const result = toRow(record.line, record.value);
    if ('code' in result) errors.push(result);
    else rows.push(result);
  }
  return { rows, errors };
}

function toRow(line: number, value: Record<string, unknown>): ContactRow | RowError {
  const rawEmail = value.email_address;
  if (typeof rawEmail !== 'string' || rawEmail.trim() === '') {
    return { line, code: 'missing_email', message: 'email_address is required' };
  }
  const email = normalizeEmail(rawEmail);
  // The address itself is never echoed: errors may be logged or shown to other people.
  if (!isEmailAddress(email)) return { line, code: 'invalid_email', message: 'email_address is not a valid e-mail address' };
  const row: ContactRow = { line, email, columns: {}, custom: {} };
  for (const [key, field] of Object.entries(value)) {
    if (key === 'email_address' || field === '' || field === null || field === undefined) continue;
    if (known.has(key)) {
      row.columns[key as ContactColumn] = String(field);
    } else if (!FIELD_NAME.test(key)) {
      return { line, code: 'invalid_field_name', message: `column "${key}" must match ${FIELD_NAME}` };
    } else {
      row.custom[key] = field;
    }
  }
  return row;
}

type RawRecord = { line: number; value: Record<string, unknown> } | { line: number; error: string };

function csvRecords(body: string): RawRecord[] {
  // Rows are read as arrays and zipped with the header here: a header is partner data, and the parser's
  // own column mode assigns it as a plain key, where `__proto__` vanished instead of being reported.
  const [header, ...rows] = parseCsv(body, {
    skip_empty_lines: true,
    trim: true,
    bom: true,
    info: true,
    relax_column_count: false,
  }) as unknown as Array<{ record: string[]; info: { lines: number } }>;
  if (!header) return [];
  return rows.map((r) => ({ line: r.info.lines, value: Object.fromEntries(header.record.map((name, i) => [name, r.record[i]])) }));
}

function ndjsonRecords(body: string): RawRecord[] {
  const out: RawRecord[] = [];
  body.split('\n').forEach((text, i) => {
    if (text.trim() === '') return;
    try {
      const value: unknown = JSON.parse(text);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        out.push({ line: i + 1, error: 'each line must be a JSON object' });
      } else {
        out.push({ line: i + 1, value: value as Record<string, unknown> });
      }
    } catch {
      out.push({ line: i + 1, error: 'not valid JSON' });
    }
  });
  return out;
}
