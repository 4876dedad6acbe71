import pg from 'pg';
import { anchorV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, freePort, type HardhatNode, type Sandbox, startHardhat } from '@cairn/testing';
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

export async function stopAnchorFleet(fleet: Partial<AnchorFleet> | undefined): Promise<void> {
  await fleet?.admin?.end();
  fleet?.anchor?.close();
  await fleet?.service?.stop();
  await fleet?.sandbox?.dispose();
  await fleet?.chain?.stop();
}
