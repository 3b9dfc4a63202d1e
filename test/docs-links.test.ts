/**
 * The documentation holds together: every relative link of README.md, docs/ and bench/README.md opens a
 * file of the repository (and the heading an anchor names), none leaves the repository, and the README
 * stays a short front door.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { projectRoot } from '../src/core/paths.js';

const markdownFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? markdownFiles(path) : name.endsWith('.md') ? [path] : [];
  });
const pages = [join(projectRoot, 'README.md'), join(projectRoot, 'bench/README.md'), ...markdownFiles(join(projectRoot, 'docs'))];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const anchors = (markdown: string) =>
  new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')));

t.test('every relative link opens a file of the repository', async (t) => {
  for (const page of pages) {
    const text = readFileSync(page, 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^(https?:|mailto:)/.test(target!)) continue;
      const [path, anchor] = target!.split('#');
      const file = path ? resolve(dirname(page), path) : page;
      const name = `${relative(projectRoot, page)} → ${target}`;
      t.notOk(relative(projectRoot, file).startsWith('..'), `${name} stays inside the repository`);
      t.ok(existsSync(file), `${name} exists`);
      if (anchor && existsSync(file) && file.endsWith('.md')) t.ok(anchors(readFileSync(file, 'utf8')).has(anchor), `${name}: the heading exists`);
    }
  }
});

t.test('the README is a short front door linking every reader', async (t) => {
  const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8');
  t.ok(Buffer.byteLength(readme) <= 10 * 1024, `README.md is ${Buffer.byteLength(readme)} bytes`);
  for (const page of ['docs/partners.md', 'docs/audience-api.md', 'docs/data-engineers.md', 'docs/operators.md', 'docs/README.md']) t.match(readme, `](${page})`);
  t.match(readme, /npm ci && npm start/);
  t.match(readme, /npm test/);
});
