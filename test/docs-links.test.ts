import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { REPO_ROOT } from '@cairn/testing';

// Every relative link in the repository's prose resolves: README.md, docs/ (decision records included) and each
// service's README. Docs move and records get renumbered; a link to a page or heading that is gone fails here
// rather than in a reader's browser. External links (http, mailto) are not fetched.

function markdownUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownUnder(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

function servicesReadmes(): string[] {
  const services = join(REPO_ROOT, 'services');
  return readdirSync(services)
    .map((name) => join(services, name, 'README.md'))
    .filter((path) => existsSync(path));
}

const PAGES = [join(REPO_ROOT, 'README.md'), ...markdownUnder(join(REPO_ROOT, 'docs')), ...servicesReadmes()];

/** GitHub's heading anchor: lower case, punctuation dropped (letters, digits, `-` and `_` kept), spaces to `-`. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(page: string): Set<string> {
  const text = readFileSync(page, 'utf8').replace(/```[\s\S]*?```/g, '');
  const headings = text.split('\n').filter((line) => /^#{1,6} /.test(line));
  return new Set(headings.map((line) => anchorOf(line.replace(/^#+ /, ''))));
}

/** `[text](target)` links outside code blocks and code spans, with the line they are on. */
function linksOf(page: string): Array<{ target: string; line: number }> {
  const lines = readFileSync(page, 'utf8').split('\n');
  const found: Array<{ target: string; line: number }> = [];
  let fenced = false;
  lines.forEach((raw, index) => {
    if (raw.trimStart().startsWith('```')) fenced = !fenced;
    if (fenced) return;
    const text = raw.replace(/`[^`]*`/g, '');
    for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) found.push({ target: match[1]!, line: index + 1 });
  });
  return found;
}

describe('relative links in the docs', () => {
  const links = PAGES.flatMap((page) => linksOf(page).map((link) => ({ page, ...link })));
  const local = links.filter(({ target }) => !/^[a-z][a-z0-9+.-]*:/i.test(target));

  it('finds the pages and links it checks', () => {
    expect(PAGES.some((page) => page.endsWith(join('docs', 'decisions', 'README.md')))).toBe(true);
    expect(local.length).toBeGreaterThan(50);
  });

  it('every relative link names a file or directory that exists, and a heading that exists in it', () => {
    const broken: string[] = [];
    for (const { page, target, line } of local) {
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? page : resolve(dirname(page), decodeURIComponent(path));
      const where = `${relative(REPO_ROOT, page)}:${line} → ${target}`;
      if (!existsSync(file)) {
        broken.push(`${where} (no such file)`);
      } else if (anchor && statSync(file).isFile() && file.endsWith('.md') && !anchorsOf(file).has(anchor)) {
        broken.push(`${where} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
