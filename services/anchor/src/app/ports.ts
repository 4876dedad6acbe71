import type { Hex } from 'viem';

/**
 * The chain side of anchoring (adapters/chain.ts implements it over JSON-RPC). A root is written as the calldata
 * of a transaction the anchoring account sends to itself; transactions are signed here and broadcast raw, so the
 * hash is known (and stored) before the node sees it, and a transaction the node lost is broadcast again byte for
 * byte.
 */
export interface ChainWriter extends ChainReader {
  readonly address: Hex;
  /** Nonces: mined (`latest`) and including the node's mempool (`pending`). */
  nonces(): Promise<{ latest: number; pending: number }>;
  sign(root: Hex, nonce: number): Promise<{ raw: Hex; hash: Hex; chainId: number }>;
  broadcast(raw: Hex): Promise<void>;
  receipt(hash: Hex): Promise<{ blockNumber: number; success: boolean } | null>;
  known(hash: Hex): Promise<boolean>;
  head(): Promise<number>;
}

/** What the verifier's anchor check needs from the chain. */
export interface ChainReader {
  chainId(): Promise<number>;
  /** A mined transaction as the chain holds it (null when the node does not know it or it is not mined). */
  transaction(hash: Hex): Promise<ChainTransaction | null>;
}

export interface ChainTransaction {
  from: Hex;
  to: Hex | null;
  input: Hex;
  blockNumber: number;
}
