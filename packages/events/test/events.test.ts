import { describe, expect, it } from '@jest/globals';
import { sampleEvent } from '@cairn/testing';
import { EVENT_TYPES, newEvent, parseEvent } from '../src/index.js';

describe('events', () => {
  it.each(EVENT_TYPES)('%s: what its producer writes parses back to the same event', (type) => {
    const event = sampleEvent(type, 't_events');
    const parsed = parseEvent(JSON.parse(JSON.stringify(event)));
    expect(parsed).toEqual({ ok: true, event });
  });

  it('keeps a field it does not know (a newer producer), so consumers pass the whole payload on', () => {
    const event = sampleEvent('key.revoked', 't_events');
    const parsed = parseEvent({ ...event, data: { ...event.data, reason: 'rotated' } });
    expect(parsed.ok && parsed.event.data).toEqual({ ...event.data, reason: 'rotated' });
  });

  it('refuses an event its type does not define, naming its id and type', () => {
    const event = sampleEvent('asset.signed', 't_events');
    const { blob_key: _dropped, ...data } = event.data;
    const parsed = parseEvent({ ...event, data });
    expect(parsed).toMatchObject({ ok: false, type: 'asset.signed', eventId: event.event_id });
    expect(parseEvent({ ...event, type: 'asset.deleted' }).ok).toBe(false);
    expect(parseEvent({ ...event, created_at: 'yesterday' }).ok).toBe(false);
    expect(parseEvent('{}').ok).toBe(false);
    expect(parseEvent(null).ok).toBe(false);
  });

  it('refuses to make an invalid event (a producer bug fails where it is made)', () => {
    const data = { ...sampleEvent('asset.lookup', 't_events').data, matches: -1 };
    expect(() => newEvent('asset.lookup', 't_events', data)).toThrow();
  });
});
