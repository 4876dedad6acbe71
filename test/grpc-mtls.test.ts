import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { billingV1 } from '@cairn/proto';
import { connect as tlsConnect } from 'node:tls';
import { CODE_METADATA_KEY, createClient, readTlsFiles, serviceTlsName, type TlsMaterial } from '@cairn/rpc';
import { makeDevPki } from '@cairn/testing';
import { onboard, startStack, type Stack } from './support/stack.js';

// gRPC between services is mutual TLS (docs/decisions/0029-fleet-identities.md): the gateway reaches billing with its
// certificate, and nobody reaches billing without one of the fleet's CA.
let stack: Stack;
let strangerDir: string;
let billingAddress: string;
let own: (service: string) => TlsMaterial;

beforeAll(async () => {
  stack = await startStack(['gateway'], {}, undefined, { tls: true });
  strangerDir = await mkdtemp(join(tmpdir(), 'cairn-stranger-pki-'));
  billingAddress = `127.0.0.1:${stack.services.get('billing')!.grpcPort}`;
  own = (service) => readTlsFiles(stack.tls![service]!);
}, 120_000);

afterAll(async () => {
  await stack.stop();
  await rm(strangerDir, { recursive: true, force: true });
});

const account = (tls: TlsMaterial | undefined, serverName = serviceTlsName('billing')) =>
  createClient(billingV1.BillingService, billingAddress, {
    retries: 0,
    deadlineMs: 5000,
    ...(tls ? { tls, serverName } : {}),
  });

/** 'refused' when the call never reached billing (a transport UNAVAILABLE without a cairn code); 'answered' otherwise. */
function settle(call: Promise<unknown>): Promise<'answered' | 'refused'> {
  return call.then(
    () => 'answered',
    (error: unknown) => {
      type Transport = { code?: number; metadata?: { get(key: string): unknown[] } };
      const cause = (error as { cause?: Transport }).cause ?? (error as Transport);
      const answeredByHandler = (cause.metadata?.get(CODE_METADATA_KEY).length ?? 0) > 0;
      return cause.code === GRPC_UNAVAILABLE && !answeredByHandler ? 'refused' : 'answered';
    },
  );
}

async function outcome(tls: TlsMaterial | undefined, serverName?: string): Promise<'answered' | 'refused'> {
  const client = account(tls, serverName);
  try {
    return await settle(client.getUsage({ tenantId: 'ten_nobody' }));
  } finally {
    client.close();
  }
}

const GRPC_UNAVAILABLE = 14;

/**
 * A TLS connection that trusts the fleet's CA but presents no client certificate (createClient always
 * presents one): the server's answer to it, an alert or a closed socket before any HTTP/2 frame.
 */
function withoutClientCert(ca: Buffer): Promise<string> {
  const [host, port] = billingAddress.split(':') as [string, string];
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host,
      port: Number(port),
      ca,
      servername: serviceTlsName('billing'),
      ALPNProtocols: ['h2'],
    });
    // TLS 1.3: the client's side of the handshake completes, then the server's verdict arrives as an alert.
    socket.once('data', () => (socket.destroy(), resolve('served')));
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    socket.once('close', () => resolve('closed'));
  });
}

describe('gRPC mutual TLS between services', () => {
  it("the gateway calls billing over mutual TLS: a tenant's usage (billing's answer) comes through the API", async () => {
    const { api_key } = await onboard(stack, 'free');
    const usage = await stack.request('/v1/usage', { headers: { authorization: `Bearer ${api_key}` } });
    expect(usage.status).toBe(200);
  });

  it('a client holding a certificate of the fleet CA gets in', async () => {
    expect(await outcome(own('gateway'))).toBe('answered');
  });

  it('a plaintext client, a client without a certificate, or with a certificate of another CA, is refused', async () => {
    expect(await outcome(undefined)).toBe('refused');
    expect(await withoutClientCert(own('gateway').ca)).toMatch(/CERTIFICATE_REQUIRED/);
    const stranger = (await makeDevPki(strangerDir, ['gateway']))['gateway']!;
    // Trusting the fleet's CA for the server, but presenting a certificate the fleet never issued.
    const forged: TlsMaterial = {
      ca: own('gateway').ca,
      cert: readFileSync(stranger.cert),
      key: readFileSync(stranger.key),
    };
    expect(await outcome(forged)).toBe('refused');
  });

  it('a client refuses a server whose certificate is not the service it asked for', async () => {
    // Billing's certificate names cairn-billing: a client that dialled billing's address expecting the signer stops.
    expect(await outcome(own('gateway'), serviceTlsName('signer'))).toBe('refused');
  });
});
