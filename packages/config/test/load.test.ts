import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ConfigError, commonEnvShape, loadConfig } from '../src/index.js';

describe('loadConfig', () => {
  it('applies the local defaults when nothing is set', () => {
    const cfg = loadConfig(commonEnvShape, {});
    expect(cfg.CAIRN_ENV).toBe('development');
    expect(cfg.DATABASE_URL).toBe('postgres://cairn@127.0.0.1:5432/cairn');
    expect(cfg.NATS_SUBJECT_PREFIX).toBe('cairn');
  });

  it('coerces numbers from strings', () => {
    const cfg = loadConfig({ ...commonEnvShape, GRPC_PORT: commonEnvShape.GRPC_PORT }, { GRPC_PORT: '9451' });
    expect(cfg.GRPC_PORT).toBe(9451);
  });

  it('reports every invalid variable in one error', () => {
    const shape = { ...commonEnvShape, KEK: z.string().length(64) };
    let caught: unknown;
    try {
      loadConfig(shape, { CAIRN_ENV: 'staging', DATABASE_URL: 'not a url', KEK: 'short' });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const names = (caught as ConfigError).problems.map((p) => p.split(':')[0]).sort();
    expect(names).toEqual(['CAIRN_ENV', 'DATABASE_URL', 'KEK']);
  });
});

describe('JetStream stream settings', () => {
  it('default to one replica and 1 GiB per stream', () => {
    const cfg = loadConfig(commonEnvShape, {});
    expect(cfg.NATS_STREAM_REPLICAS).toBe(1);
    expect(cfg.NATS_STREAM_MAX_BYTES).toBe(1073741824);
  });

  it('take 1..5 replicas and a positive size or -1 (unlimited)', () => {
    expect(loadConfig(commonEnvShape, { NATS_STREAM_REPLICAS: '3', NATS_STREAM_MAX_BYTES: '-1' })).toMatchObject({
      NATS_STREAM_REPLICAS: 3,
      NATS_STREAM_MAX_BYTES: -1,
    });
    for (const env of [
      { NATS_STREAM_REPLICAS: '0' },
      { NATS_STREAM_REPLICAS: '6' },
      { NATS_STREAM_MAX_BYTES: '0' },
      { NATS_STREAM_MAX_BYTES: '-2' },
      { NATS_STREAM_MAX_BYTES: '1.5' },
    ])
      expect(() => loadConfig(commonEnvShape, env)).toThrow(ConfigError);
  });
});
