import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { CONFIGURATION_DOC, renderConfigurationDoc } from '../tools/dev/src/config-docs.js';

describe('docs/configuration.md', () => {
  it('is what `pnpm docs:config` renders from the config shapes (their defaults and doc comments)', async () => {
    const rendered = await renderConfigurationDoc();
    const checkedIn = readFileSync(CONFIGURATION_DOC, 'utf8');
    const page = checkedIn.split('\n');
    const fresh = rendered.split('\n');
    // The first differing lines, so the failure says what changed; the fix is always to regenerate.
    const differing = fresh
      .map((line, index) => ({ line: index + 1, code: line, page: page[index] }))
      .filter(({ code, page: onPage }) => code !== onPage)
      .slice(0, 5);
    expect({
      fix: 'run pnpm docs:config and commit docs/configuration.md',
      differing,
      lines: page.length,
    }).toEqual({ fix: 'run pnpm docs:config and commit docs/configuration.md', differing: [], lines: fresh.length });
  });
});
