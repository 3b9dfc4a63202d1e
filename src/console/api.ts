/**
 * The admin API from the console: the admin key from this tab's session storage as the bearer (never
 * local storage, never the URL), problem+json answers turned into ApiError with their `code` and `detail`.
 */
const KEY = 'audience.adminKey';

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn: (key: string): void => sessionStorage.setItem(KEY, key),
  signOut: (): void => {
    sessionStorage.removeItem(KEY);
    window.dispatchEvent(new Event('audience:signed-out'));
  },
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly body: Record<string, unknown> = {},
    /** From `Retry-After` (429, 503). */
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

/** One admin call. A refused admin key signs the tab out (the key was rotated or mistyped). */
export async function api<T>(method: string, path: string, body?: unknown, key = session.key()): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${key ?? ''}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'unreachable', 'The service did not answer. Is it running?');
  }
  const text = await res.text();
  const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  if (res.ok) return json as T;
  const retryAfter = Number(res.headers.get('retry-after') ?? Number.NaN);
  const error = new ApiError(res.status, String(json.code ?? res.status), String(json.detail ?? json.title ?? res.statusText), json, Number.isFinite(retryAfter) ? retryAfter : undefined);
  if (error.code === 'invalid_admin_key' && key === session.key()) session.signOut();
  throw error;
}

/** A slug or name as one path segment, whatever it holds. */
export const seg = encodeURIComponent;

/** `&cursor=…` for a page of a list after the first. */
export const cursorParam = (cursor: string | undefined): string => (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');

/** A paged list's answer as its items (under `member`) and the cursor of the next page. */
export async function asPage<M extends string, T>(answer: Promise<Record<M, T[]> & { nextCursor: string | null }>, member: M): Promise<{ items: T[]; nextCursor: string | null }> {
  const body = await answer;
  return { items: body[member], nextCursor: body.nextCursor };
}

/**
 * A file upload with progress (fetch reports none): resolves with the JSON answer, rejects with ApiError.
 * `onProgress` gets the fraction sent, 0 to 1.
 */
export function upload<T>(path: string, file: Blob, contentType: string, onProgress: (fraction: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.setRequestHeader('authorization', `Bearer ${session.key() ?? ''}`);
    xhr.setRequestHeader('content-type', contentType);
    xhr.setRequestHeader('accept', 'application/json');
    xhr.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total);
    xhr.onerror = () => reject(new ApiError(0, 'unreachable', 'The service did not answer. Is it running?'));
    xhr.onload = () => {
      const json = (xhr.responseText ? JSON.parse(xhr.responseText) : {}) as Record<string, unknown>;
      if (xhr.status >= 200 && xhr.status < 300) resolve(json as T);
      else reject(new ApiError(xhr.status, String(json.code ?? xhr.status), String(json.detail ?? json.title ?? xhr.statusText), json));
    };
    xhr.send(file);
  });
}
