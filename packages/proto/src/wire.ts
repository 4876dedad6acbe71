// Conversions between the internal API's typed fields (cairn.common.v1 enums, google.protobuf.Timestamp) and what
// the services hold and the public HTTP API answers (lower-case names such as "verified_manifest", ISO 8601
// times). One place, so every producer and consumer maps the same way and a value outside the set is refused where
// it is read (docs/decisions/0005-shared-enums-and-timestamps.md). Pure code (no I/O), so domain/ modules may use it
// too.
import type { DescEnum } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import * as commonV1 from './gen/cairn/common/v1/common_pb.js';

/**
 * A value that breaks an internal contract (outside an enum's set, UNSPECIFIED where one is required, not a time).
 * Not a CairnError on purpose: it is a bug between two services, which the RPC layer answers as
 * cairn.internal_error and logs with this message.
 */
export class WireValueError extends Error {
  override readonly name = 'WireValueError';
}

/** The public names of a generated enum's values: its TypeScript names in lower case, UNSPECIFIED left out. */
export type WireNames<T> = Lowercase<Exclude<keyof T, 'UNSPECIFIED'> & string>;

/** Maps a closed set between its public names and its protobuf enum, refusing anything outside the set. */
export interface EnumCodec<E extends number, N extends string> {
  /** Every public name, in the enum's order. */
  readonly names: readonly N[];
  is(name: string): name is N;
  /** The enum value of a public name; a name outside the set is an error (never UNSPECIFIED). */
  toProto(name: string): E;
  /** The public name of an enum value; UNSPECIFIED or a number this build does not know is an error. */
  fromProto(value: E): N;
}

/** An EnumCodec over a generated enum: `enumCodec<typeof commonV1.Modality>(commonV1.ModalitySchema)`. */
export function enumCodec<T extends Record<string, number | string>>(
  schema: DescEnum,
): EnumCodec<T[keyof T] & number, WireNames<T>> {
  type E = T[keyof T] & number;
  type N = WireNames<T>;
  const byName = new Map<string, E>();
  const byNumber = new Map<number, N>();
  for (const value of schema.values) {
    if (value.number === 0) continue;
    const name = value.localName.toLowerCase() as N;
    byName.set(name, value.number as E);
    byNumber.set(value.number, name);
  }
  const names = [...byNumber.values()];
  return {
    names,
    is: (name: string): name is N => byName.has(name),
    toProto(name: string): E {
      const value = byName.get(name);
      if (value === undefined)
        throw new WireValueError(`${schema.typeName}: "${name}" is not one of ${names.join(', ')}`);
      return value;
    },
    fromProto(value: E): N {
      const name = byNumber.get(value);
      if (name === undefined)
        throw new WireValueError(
          `${schema.typeName}: ${value === 0 ? 'unspecified (0)' : `unknown value ${value}`} where a value is required`,
        );
      return name;
    },
  };
}

export const verificationStatuses = enumCodec<typeof commonV1.VerificationStatus>(commonV1.VerificationStatusSchema);
export const jobStates = enumCodec<typeof commonV1.JobState>(commonV1.JobStateSchema);
export const anchorBatchStates = enumCodec<typeof commonV1.AnchorBatchState>(commonV1.AnchorBatchStateSchema);
export const deliveryStates = enumCodec<typeof commonV1.DeliveryState>(commonV1.DeliveryStateSchema);
export const modalities = enumCodec<typeof commonV1.Modality>(commonV1.ModalitySchema);

export type VerificationStatusName = WireNames<typeof commonV1.VerificationStatus>;
export type JobStateName = WireNames<typeof commonV1.JobState>;
export type AnchorBatchStateName = WireNames<typeof commonV1.AnchorBatchState>;
export type DeliveryStateName = WireNames<typeof commonV1.DeliveryState>;
export type ModalityName = WireNames<typeof commonV1.Modality>;

/** A time for the wire: a Date, or an ISO 8601 string; an unparseable string is an error, never the epoch. */
export function toTimestamp(value: Date | string): Timestamp {
  const date = typeof value === 'string' ? new Date(value) : value;
  if (Number.isNaN(date.getTime())) throw new WireValueError(`not a time: ${JSON.stringify(String(value))}`);
  return timestampFromDate(date);
}

/** toTimestamp for a time that may be absent (null, undefined or ''): the field is then left unset. */
export function toOptionalTimestamp(value: Date | string | null | undefined): Timestamp | undefined {
  return value === null || value === undefined || value === '' ? undefined : toTimestamp(value);
}

/** The Date of a wire time (millisecond precision, as every time Cairn keeps). */
export function fromTimestamp(timestamp: Timestamp): Date {
  return timestampDate(timestamp);
}

/** The public JSON form of a wire time: ISO 8601 with milliseconds in UTC, or null when the field is unset. */
export function isoTimestamp(timestamp: Timestamp): string;
export function isoTimestamp(timestamp: Timestamp | undefined): string | null;
export function isoTimestamp(timestamp: Timestamp | undefined): string | null {
  return timestamp ? timestampDate(timestamp).toISOString() : null;
}
