import { describe, expect, it } from '@jest/globals';
import { isId, newApiKey, newId, newWebhookSecret, parseApiKey } from '../src/index.js';

describe('ids', () => {
  it('prefixes ULIDs and sorts by creation order', () => {
    const a = newId('asset');
    const b = newId('asset');
    expect(a).toMatch(/^a_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(isId('asset', a)).toBe(true);
    expect(isId('tenant', a)).toBe(false);
    expect(a < b).toBe(true);
  });

  it('round-trips an API key to its key id and secret', () => {
    const { keyId, apiKey, secret } = newApiKey();
    expect(apiKey.startsWith('cairn_sk_key_')).toBe(true);
    expect(parseApiKey(apiKey)).toEqual({ keyId, secret });
  });

  it('refuses keys of the wrong shape', () => {
    const { apiKey } = newApiKey();
    expect(parseApiKey(apiKey.slice(0, -1))).toBeNull();
    expect(parseApiKey('Bearer ' + apiKey)).toBeNull();
    expect(parseApiKey('cairn_sk_key_short_secret')).toBeNull();
  });

  it('makes whsec_ secrets with 32 bytes of entropy', () => {
    const s = newWebhookSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(newWebhookSecret()).not.toBe(s);
  });
});
