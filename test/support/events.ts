import { Bus, type RunningConsumer } from '@cairn/bus';
import type { AnyEvent, EventType } from '@cairn/events';

/** A bus client on the NATS stream and subject prefix of `env` (a sandbox's or a stack's): what its services see. */
export function connectBus(env: NodeJS.ProcessEnv): Promise<Bus> {
  return Bus.connect({
    url: String(env.NATS_URL),
    stream: String(env.NATS_STREAM),
    subjectPrefix: String(env.NATS_SUBJECT_PREFIX),
  });
}

/** Appends every event of `types` to `into` as it arrives, under a durable consumer of its own. */
export function collectEvents(
  bus: Bus,
  durable: string,
  types: EventType[],
  into: AnyEvent[],
): Promise<RunningConsumer> {
  return bus.consume({ durable, types, handler: async (event) => void into.push(event) });
}
