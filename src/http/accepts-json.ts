/** Whether an Accept header admits application/json (absent means anything; q=0 means "not this"). */
export function acceptsJson(accept: string | undefined): boolean {
  // What nearly every client sends, answered without parsing.
  if (accept === undefined || accept === 'application/json') return true;
  if (accept.trim() === '') return true;
  return accept.split(',').some((part) => {
    const [range, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q !== undefined && Number(q.slice(2)) === 0) return false;
    return range === 'application/json' || range === 'application/*' || range === '*/*';
  });
}
