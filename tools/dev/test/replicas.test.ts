/**
 * `npm run up -- --replicas N`: what the launcher plans for N processes per service (the processes themselves are
 * started in test/replica-kill.test.ts).
 */
import { describe, expect, it } from '@jest/globals';
import { DEFAULT_PORTS, SERVICE_NAMES } from '@cairn/config';
import { parseOptions, UsageError } from '../src/options.js';
import { allPorts, grpcTarget, planFleet, REPLICA_PORT_STRIDE } from '../src/plan.js';

const plan = (replicas: number, offset = 0, base: NodeJS.ProcessEnv = {}) =>
  planFleet(base, {
    offset,
    replicas,
    databaseUrl: 'postgres://cairn@127.0.0.1:5432/cairn',
    dataKey: '0'.repeat(64),
    blobStoreUrl: 'file:///tmp/cairn-blobs',
    serviceRoles: true,
  });

describe('the launcher with --replicas', () => {
  it('takes --replicas, 1 by default, and refuses a count whose last replica would leave the port range', () => {
    expect(parseOptions([]).replicas).toBe(1);
    expect(parseOptions(['--replicas', '3']).replicas).toBe(3);
    expect(() => parseOptions(['--replicas', '0'])).toThrow(UsageError);
    expect(() => parseOptions(['--replicas', '11'])).toThrow(UsageError);
    expect(() => parseOptions(['--replicas', 'two'])).toThrow(UsageError);
    expect(() => parseOptions(['--replicas', '10', '--port-offset', '50000'])).toThrow(/past 65535/);
    expect(parseOptions(['--replicas', '2', '--port-offset', '55000']).replicas).toBe(2);
  });

  it('runs every service N times, replica r on its ports shifted by r × the stride, no port used twice', () => {
    const fleet = plan(2, 300);
    expect(fleet.services).toHaveLength(SERVICE_NAMES.length * 2);
    const signers = fleet.services.filter((s) => s.name === 'signer');
    expect(signers.map((s) => [s.label, s.grpcPort, s.opsPort, s.env.GRPC_PORT, s.env.OCSP_PORT])).toEqual([
      ['signer-0', 9751, 9761, '9751', '9771'],
      ['signer-1', 9751 + REPLICA_PORT_STRIDE, 9761 + REPLICA_PORT_STRIDE, '10751', '10771'],
    ]);
    const ports = allPorts(fleet).map((p) => p.port);
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('gives every caller all replicas of each peer as one target, so its calls spread over them', () => {
    const fleet = plan(2);
    for (const service of fleet.services)
      expect(service.env.BILLING_GRPC_ADDR).toBe(
        `ipv4:127.0.0.1:${DEFAULT_PORTS.billing.grpc},127.0.0.1:${DEFAULT_PORTS.billing.grpc + REPLICA_PORT_STRIDE}`,
      );
    // One replica: the plain address, as before.
    expect(plan(1).services[0]!.env.BILLING_GRPC_ADDR).toBe(`127.0.0.1:${DEFAULT_PORTS.billing.grpc}`);
    expect(grpcTarget('[::1]', [1, 2])).toBe('ipv6:[::1]:1,[::1]:2');
  });

  it('gives each gateway replica its own HTTP port, with one public URL and one OCSP URL (the first replica’s)', () => {
    const fleet = plan(3);
    const gateways = fleet.services.filter((s) => s.name === 'gateway');
    expect(gateways.map((s) => s.env.HTTP_PORT)).toEqual(['8080', '9080', '10080']);
    expect(fleet.httpPorts).toEqual([8080, 9080, 10080]);
    expect(new Set(fleet.services.map((s) => s.env.PUBLIC_BASE_URL))).toEqual(new Set(['http://127.0.0.1:8080']));
    expect(new Set(fleet.services.map((s) => s.env.OCSP_PUBLIC_URL))).toEqual(new Set(['http://127.0.0.1:9471/ocsp']));
    // One local chain for every anchor replica.
    expect(new Set(fleet.services.filter((s) => s.name === 'anchor').map((s) => s.env.ANCHOR_RPC_URL))).toEqual(
      new Set([fleet.chain!.url]),
    );
    expect(allPorts(fleet).filter((p) => p.what.includes('chain'))).toHaveLength(1);
  });
});
