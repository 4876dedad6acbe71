import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { listByReflection } from '@cairn/rpc';
import { startStack, type Stack } from './support/stack.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack(['billing', 'audit']);
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

describe('gRPC server reflection', () => {
  it("lists a service's methods as grpcurl would, and only the services that server runs", async () => {
    const billing = await listByReflection(`127.0.0.1:${stack.services.get('billing')!.grpcPort}`);
    const names = billing.map((s) => s.name);
    expect(names).toContain('cairn.billing.v1.BillingService');
    expect(names).not.toContain('cairn.audit.v1.AuditService');
    expect(billing.find((s) => s.name === 'cairn.billing.v1.BillingService')!.methods).toEqual(
      expect.arrayContaining(['Reserve', 'Commit', 'Release']),
    );

    const audit = await listByReflection(`127.0.0.1:${stack.services.get('audit')!.grpcPort}`);
    expect(audit.map((s) => s.name)).toContain('cairn.audit.v1.AuditService');
    expect(audit.find((s) => s.name === 'cairn.audit.v1.AuditService')!.methods.length).toBeGreaterThan(0);
  });
});
