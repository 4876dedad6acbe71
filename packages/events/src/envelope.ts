import { z } from 'zod';
import { newId } from '@cairn/ids';
import {
  EVENT_DATA,
  EVENT_PARSERS,
  EVENT_TYPES,
  type EventData,
  type EventDataInput,
  type EventType,
} from './schemas.js';

/** The envelope every event travels in (JSON over NATS, and in each service's outbox), with its typed data. */
export interface Event<T extends EventType = EventType> {
  event_id: string;
  type: T;
  tenant_id: string;
  created_at: string;
  data: EventData<T>;
}

/** An event of one of the types T: a union discriminated by `type`, so `event.type === '…'` narrows `data`. */
export type EventOf<T extends EventType> = { [K in T]: Event<K> }[T];

/** Any event Cairn publishes. */
export type AnyEvent = EventOf<EventType>;

const envelopeFields = {
  event_id: z.string().startsWith('evt_'),
  tenant_id: z.string().min(1),
  created_at: z.string().datetime({ offset: true }),
};

function envelopeOf<T extends EventType>(type: T) {
  return z.object({ ...envelopeFields, type: z.literal(type), data: EVENT_PARSERS[type] });
}

/** Parses a whole event: the envelope and the data its type defines. */
export const eventSchema = z.discriminatedUnion(
  'type',
  EVENT_TYPES.map((type) => envelopeOf(type)) as unknown as [
    ReturnType<typeof envelopeOf>,
    ...ReturnType<typeof envelopeOf>[],
  ],
);

export type ParsedEvent =
  { ok: true; event: AnyEvent } | { ok: false; error: z.ZodError; type?: string; eventId?: string };

/**
 * Parses what arrived off the wire. Never throws: a consumer logs and terminates what does not parse (a
 * redelivery cannot fix it), and the failure names the event's id and type when those at least were readable.
 */
export function parseEvent(json: unknown): ParsedEvent {
  const result = eventSchema.safeParse(json);
  if (result.success) return { ok: true, event: result.data as AnyEvent };
  const raw = typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {};
  return {
    ok: false,
    error: result.error,
    ...(typeof raw.type === 'string' ? { type: raw.type } : {}),
    ...(typeof raw.event_id === 'string' ? { eventId: raw.event_id } : {}),
  };
}

/**
 * Makes an event of `type` for `tenantId`. `data` is checked against the type's schema at compile time and
 * again here, so a producer's mistake fails where it is made instead of in every consumer.
 */
export function newEvent<T extends EventType>(
  type: T,
  tenantId: string,
  data: EventDataInput<T>,
  now = new Date(),
): EventOf<T> {
  const parsed = EVENT_PARSERS[type].parse(data) as EventData<T>;
  return { event_id: newId('event'), type, tenant_id: tenantId, created_at: now.toISOString(), data: parsed };
}

export function isEventType(type: string): type is EventType {
  return Object.hasOwn(EVENT_DATA, type);
}
