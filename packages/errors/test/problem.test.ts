import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  absentAsUndefined,
  asCairnError,
  CairnError,
  ERROR_CATALOG,
  parseOrThrow,
  toJobProblem,
  toProblem,
} from '../src/index.js';

const ctx = { docsUrl: 'https://docs.example/', requestId: 'req_01J0000000000000000000000' };

describe('toProblem', () => {
  it('renders a catalog error as RFC 7807 with the code in the type URL', () => {
    const p = toProblem(new CairnError('cairn.auth.invalid_key', 'Key revoked'), ctx);
    expect(p).toEqual({
      type: 'https://docs.example/api/errors#cairn.auth.invalid_key',
      title: 'Invalid API key',
      status: 401,
      detail: 'Key revoked',
      code: 'cairn.auth.invalid_key',
      request_id: ctx.requestId,
    });
  });

  it('hides the message of an unexpected error behind cairn.internal_error', () => {
    const p = toProblem(new Error('password=hunter2 at db.ts:42'), ctx);
    expect(p.status).toBe(500);
    expect(p.code).toBe('cairn.internal_error');
    expect(JSON.stringify(p)).not.toContain('hunter2');
  });

  it('gives every catalog code an HTTP error status', () => {
    for (const [code, entry] of Object.entries(ERROR_CATALOG)) {
      expect(code).toMatch(/^cairn\.[a-z_]+(\.[a-z_]+)?$/);
      expect(entry.status).toBeGreaterThanOrEqual(400);
      expect(entry.status).toBeLessThan(600);
    }
  });
});

describe('parseOrThrow', () => {
  it('lists each invalid field in the problem', () => {
    const schema = z.object({ name: z.string().min(1), cap: z.number().nonnegative() });
    let caught: unknown;
    try {
      parseOrThrow(schema, { name: '', cap: -1 });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(CairnError);
    const p = toProblem(caught, ctx);
    expect(p.code).toBe('cairn.validation.invalid_body');
    expect(p.errors?.map((e) => e.path).sort()).toEqual(['cap', 'name']);
  });
});

describe('absentAsUndefined', () => {
  it('reads cairn.not_found as absent and rethrows every other failure', async () => {
    await expect(Promise.reject(new CairnError('cairn.not_found', 'gone')).catch(absentAsUndefined)).resolves.toBe(
      undefined,
    );
    const unavailable = new CairnError('cairn.unavailable', 'signer away');
    await expect(Promise.reject(unavailable).catch(absentAsUndefined)).rejects.toBe(unavailable);
    const bug = new TypeError('boom');
    await expect(Promise.reject(bug).catch(absentAsUndefined)).rejects.toBe(bug);
  });
});

describe('asCairnError / toJobProblem', () => {
  it('keeps a CairnError as it is and records its catalog title with its own detail', () => {
    const original = new CairnError('cairn.unavailable', 'signer away');
    const known = asCairnError(original, 'The job failed unexpectedly.');
    expect(known).toBe(original);
    expect(toJobProblem(known)).toEqual({
      code: 'cairn.unavailable',
      title: ERROR_CATALOG['cairn.unavailable'].title,
      status: 503,
      detail: 'signer away',
    });
  });

  it('turns anything else into cairn.internal_error with the given detail, never the original message', () => {
    const original = new Error('password=hunter2');
    const known = asCairnError(original, 'The job failed unexpectedly.');
    expect(known.code).toBe('cairn.internal_error');
    expect(known.cause).toBe(original);
    const problem = toJobProblem(known);
    expect(problem).toMatchObject({ status: 500, detail: 'The job failed unexpectedly.' });
    expect(JSON.stringify(problem)).not.toContain('hunter2');
  });
});
