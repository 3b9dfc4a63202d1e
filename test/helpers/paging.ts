/** Paging through an admin list as a client does: each page's nextCursor into the next request. */
import type { Test } from 'tap';
import type { TestApp } from './app.js';

type Page = { nextCursor: string | null } & Record<string, unknown>;

/** Every page of `url` (with `limit`), running `between` after each page. */
export async function pageAll(t: Test, h: TestApp, url: string, member: string, limit: number, between: () => Promise<void> = async () => {}) {
  const items: Array<Record<string, unknown>> = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = url.includes('?') ? '&' : '?';
    const res = await h.admin('GET', `${url}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    const page = res.json() as Page;
    t.ok(Object.hasOwn(page, 'nextCursor'), 'the answer has nextCursor');
    const list = page[member] as Array<Record<string, unknown>>;
    t.ok(list.length <= limit, 'at most limit items');
    items.push(...list);
    cursor = page.nextCursor ?? null;
    pages++;
    if (pages > 1000) throw new Error('paging does not end');
    await between();
  } while (cursor !== null);
  return { items, pages };
}

