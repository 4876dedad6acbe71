/**
 * `pnpm gen:nats-auth`: writes the chart's NATS authorization block (one user per service, its subject
 * permissions) from packages/bus/src/permissions.ts. test/deployment.test.ts fails when the file is stale.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SERVICE_NAMES } from '@cairn/config';
import { natsAuthorizationConfig } from '../../../packages/bus/src/permissions.js';

export const NATS_AUTH_FILE = fileURLToPath(
  new URL('../../../charts/cairn/files/nats-authorization.conf', import.meta.url),
);

/** The chart's stream and subject prefix (values.yaml global.env NATS_STREAM / NATS_SUBJECT_PREFIX). */
export const CHART_STREAM_NAMES = { stream: 'CAIRN_EVENTS', subjectPrefix: 'cairn' } as const;

export function renderChartNatsAuthorization(): string {
  return natsAuthorizationConfig(SERVICE_NAMES, CHART_STREAM_NAMES);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(NATS_AUTH_FILE, renderChartNatsAuthorization());
  process.stdout.write(`wrote ${NATS_AUTH_FILE}\n`);
}
