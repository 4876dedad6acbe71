import {
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  TransactionReceiptNotFoundError,
  TransactionNotFoundError,
  type Hex,
  type HttpTransport,
  type PublicClient,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { ChainTransaction, ChainWriter } from '../app/ports.js';
import { errorText } from '../domain/calldata.js';

type Client = PublicClient<HttpTransport>;

/** The chain over JSON-RPC with viem (the port is app/ports.ts). */
export function createChainWriter(rpcUrl: string, privateKey: Hex, timeoutMs = 5000): ChainWriter {
  const account = privateKeyToAccount(privateKey);
  // No transport retries: the batcher's own backoff decides when to try again.
  const transport = http(rpcUrl, { retryCount: 0, timeout: timeoutMs });
  const client = createPublicClient({ transport });
  const wallet = createWalletClient({ account, transport });
  let chainId: number | undefined;
  const getChainId = async () => (chainId ??= await client.getChainId());
  return {
    address: account.address,
    chainId: getChainId,
    nonces: () => noncesOf(client, account.address),
    sign: async (root, nonce) => signRoot(wallet, account, await getChainId(), root, nonce),
    broadcast: (raw) => broadcast(client, raw),
    receipt: (hash) => receiptOf(client, hash),
    known: (hash) => isKnown(client, hash),
    head: async () => Number(await client.getBlockNumber({ cacheTime: 0 })),
    transaction: (hash) => minedTransaction(client, hash),
  };
}

async function noncesOf(client: Client, address: Hex): Promise<{ latest: number; pending: number }> {
  const [latest, pending] = await Promise.all([
    client.getTransactionCount({ address, blockTag: 'latest' }),
    client.getTransactionCount({ address, blockTag: 'pending' }),
  ]);
  return { latest, pending };
}

/** A transaction to ourselves carrying `root` as its data, priced by the node and signed locally. */
async function signRoot(
  wallet: WalletClient,
  account: PrivateKeyAccount,
  chainId: number,
  root: Hex,
  nonce: number,
): Promise<{ raw: Hex; hash: Hex; chainId: number }> {
  const request = await wallet.prepareTransactionRequest({
    account,
    chain: null,
    to: account.address,
    data: root,
    nonce,
    value: 0n,
    type: 'eip1559',
    parameters: ['fees', 'gas'],
  });
  const raw = await account.signTransaction({
    type: 'eip1559',
    chainId,
    nonce,
    to: account.address,
    data: root,
    value: 0n,
    gas: request.gas,
    maxFeePerGas: request.maxFeePerGas,
    maxPriorityFeePerGas: request.maxPriorityFeePerGas,
  });
  return { raw, hash: keccak256(raw), chainId };
}

async function broadcast(client: Client, raw: Hex): Promise<void> {
  try {
    await client.sendRawTransaction({ serializedTransaction: raw });
  } catch (error) {
    // The node has it already (a repeat broadcast): that is the outcome we wanted.
    if (/already known|known transaction|already imported|already in (the )?mempool/i.test(errorText(error))) return;
    throw error;
  }
}

async function receiptOf(client: Client, hash: Hex): Promise<{ blockNumber: number; success: boolean } | null> {
  try {
    const receipt = await client.getTransactionReceipt({ hash });
    return { blockNumber: Number(receipt.blockNumber), success: receipt.status === 'success' };
  } catch (error) {
    if (error instanceof TransactionReceiptNotFoundError) return null;
    throw error;
  }
}

async function isKnown(client: Client, hash: Hex): Promise<boolean> {
  try {
    await client.getTransaction({ hash });
    return true;
  } catch (error) {
    if (error instanceof TransactionNotFoundError) return false;
    throw error;
  }
}

async function minedTransaction(client: Client, hash: Hex): Promise<ChainTransaction | null> {
  try {
    const tx = await client.getTransaction({ hash });
    if (tx.blockNumber === null) return null;
    return { from: tx.from, to: tx.to, input: tx.input, blockNumber: Number(tx.blockNumber) };
  } catch (error) {
    if (error instanceof TransactionNotFoundError) return null;
    throw error;
  }
}
