import { createHash } from 'node:crypto';
import pg from 'pg';
import { newId } from '@cairn/ids';
import { anchorV1, type commonV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { afterAll, beforeAll } from '@jest/globals';
import { createSandbox, freePort, type HardhatNode, type Sandbox, startHardhat, waitFor } from '@cairn/testing';
import { anchorService } from '../../src/service.js';

const anchorClient = (address: string) => createClient(anchorV1.AnchorService, address);

/**
 * The anchor service on its own sandbox and local hardhat chain, with a gRPC client and an admin connection to its
 * database (the admin role bypasses row-level security, so a test can read and forge rows behind the service).
 */
export interface AnchorFleet {
  chain: HardhatNode;
  sandbox: Sandbox;
  service: RunningService;
  anchor: ReturnType<typeof anchorClient>;
  admin: pg.Client;
}

/** Starts the fleet with `env` over the sandbox's; whatever started is stopped again if a later part fails. */
export async function startAnchorFleet(env: Record<string, string>): Promise<AnchorFleet> {
  const parts: Partial<AnchorFleet> = {};
  try {
    parts.chain = await startHardhat(await freePort());
    parts.sandbox = await createSandbox();
    parts.service = await startService(
      anchorService({ ...parts.sandbox.env, ANCHOR_RPC_URL: parts.chain.url, ...env }),
    );
    parts.anchor = anchorClient(`127.0.0.1:${parts.service.grpcPort}`);
    parts.admin = await parts.sandbox.adminClient();
    return parts as AnchorFleet;
  } catch (error) {
    await stopAnchorFleet(parts);
    throw error;
  }
}

/**
 * The fleet of one test file: started with `env` before its tests and stopped after them. Its parts are there once
 * the tests run (not while the file is being read).
 */
export function anchorFleetFor(env: Record<string, string>): AnchorFleet {
  const fleet = {} as AnchorFleet;
  beforeAll(async () => {
    Object.assign(fleet, await startAnchorFleet(env));
  });
  afterAll(() => stopAnchorFleet(fleet));
  return fleet;
}

export async function stopAnchorFleet(fleet: Partial<AnchorFleet> | undefined): Promise<void> {
  await fleet?.admin?.end();
  fleet?.anchor?.close();
  await fleet?.service?.stop();
  await fleet?.sandbox?.dispose();
  await fleet?.chain?.stop();
}

export const digestOf = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A signed manifest to enqueue for `tenantId`: fresh ids, and a digest no other test presents (`label` + noise). */
export const manifestOf = (tenantId: string, label: string) => ({
  tenantId,
  assetId: newId('asset'),
  manifestId: newId('manifest'),
  manifestDigest: digestOf(`${label} ${Math.random()}`),
});

/** Polls until batch `batchId` is in `state` and answers it (the jest timeout is the only limit). */
export const batchIn = (
  anchor: AnchorFleet['anchor'],
  batchId: string,
  state: commonV1.AnchorBatchState,
  what = `batch ${batchId} in state ${state}`,
) =>
  waitFor(what, async () => {
    const { batch } = await anchor.getBatch({ batchId });
    return batch?.status === state ? batch : undefined;
  });
