export {
  ADMIN_ACTIONS,
  EVENT_DATA,
  EVENT_TYPES,
  parseActorKeyId,
  secretFingerprint,
  type AdminAction,
  type EventData,
  type EventDataInput,
  type EventType,
} from './schemas.js';
export {
  eventSchema,
  isEventType,
  newEvent,
  parseEvent,
  type AnyEvent,
  type Event,
  type EventOf,
  type ParsedEvent,
} from './envelope.js';
