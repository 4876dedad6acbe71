import { z } from 'zod';

/** Hardhat's first development account. Never fund it on a real network; production sets ANCHOR_PRIVATE_KEY. */
export const DEV_PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

/** anchor-only settings (the common ones come from @cairn/config). */
export const anchorConfigShape = {
  /**
   * JSON-RPC endpoint of the EVM chain the roots are written to; `npm run up` starts a hardhat node there (port +
   * offset) unless this is set.
   */
  ANCHOR_RPC_URL: z.string().url().default('http://127.0.0.1:8545'),
  /**
   * 64 hex (`0x…`): the account that sends the roots to itself. The default is hardhat's development account 0: set
   * it for any real network.
   */
  ANCHOR_PRIVATE_KEY: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/)
    .default(DEV_PRIVATE_KEY),
  /** A batch closes when it holds this many manifests… */
  ANCHOR_BATCH_MAX: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  /** …or when its first manifest is this old. */
  ANCHOR_BATCH_MAX_AGE_MS: z.coerce.number().int().positive().default(5000),
  /**
   * Blocks (head − block + 1, the one holding the transaction included) before a batch counts as `anchored`; it stays
   * `pending` until then.
   */
  ANCHOR_CONFIRMATIONS: z.coerce.number().int().min(1).max(1000).default(1),
  /** How often the batcher looks while batches are closed or in flight (a sent one waits on blocks). */
  ANCHOR_POLL_MS: z.coerce.number().int().positive().default(500),
  /**
   * Longest sleep of the batcher with no batch at all (doubling from ANCHOR_POLL_MS). An enqueue in this process
   * wakes it; the sweep finds batches another replica opened and died with.
   */
  ANCHOR_IDLE_MAX_MS: z.coerce.number().int().positive().max(600_000).default(30_000),
  /** Ceiling of the exponential backoff after a failed send (RPC down). */
  ANCHOR_RETRY_MAX_MS: z.coerce.number().int().positive().default(30_000),
  /** Budget of one chain read made for a verify's anchor check (a confirmed root is then cached). */
  ANCHOR_CHECK_TIMEOUT_MS: z.coerce.number().int().positive().default(2000),
};
