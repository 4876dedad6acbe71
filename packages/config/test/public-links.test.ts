import { describe, expect, it } from '@jest/globals';
import { assetContentUrl, jobUrl, manifestUrl, publicUrl, verifierPageUrl } from '../src/index.js';

describe('public links', () => {
  it.each(['https://cairn.example', 'https://cairn.example/'])(
    'give the same addresses whether PUBLIC_BASE_URL ends in a slash or not (%s)',
    (base) => {
      expect(manifestUrl(base, 'm_1')).toBe('https://cairn.example/v1/manifests/m_1');
      expect(verifierPageUrl(base, 'a_1')).toBe('https://cairn.example/v/a_1');
      expect(assetContentUrl(base, 'a_1')).toBe('https://cairn.example/v1/assets/a_1/content');
      expect(jobUrl(base, 'j_1')).toBe('https://cairn.example/v1/jobs/j_1');
      expect(publicUrl(base, '')).toBe('https://cairn.example');
    },
  );

  it('keep a base path the gateway is served under', () => {
    expect(manifestUrl('https://example.org/cairn/', 'm_1')).toBe('https://example.org/cairn/v1/manifests/m_1');
    expect(publicUrl('https://example.org/cairn', '/docs')).toBe('https://example.org/cairn/docs');
  });
});
