import {
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  TransactionReceiptNotFoundError,
  TransactionNotFoundError,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { ChainWriter } from '../app/ports.js';
import { errorText } from '../domain/calldata.js';

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
    nonces: async () => {
      const [latest, pending] = await Promise.all([
        client.getTransactionCount({ address: account.address, blockTag: 'latest' }),
        client.getTransactionCount({ address: account.address, blockTag: 'pending' }),
      ]);
      return { latest, pending };
    },
    sign: async (root, nonce) => {
      const id = await getChainId();
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
        chainId: id,
        nonce,
        to: account.address,
        data: root,
        value: 0n,
        gas: request.gas,
        maxFeePerGas: request.maxFeePerGas,
        maxPriorityFeePerGas: request.maxPriorityFeePerGas,
      });
      return { raw, hash: keccak256(raw), chainId: id };
    },
    broadcast: async (raw) => {
      try {
        await client.sendRawTransaction({ serializedTransaction: raw });
      } catch (error) {
        // The node has it already (a repeat broadcast): that is the outcome we wanted.
        if (/already known|known transaction|already imported|already in (the )?mempool/i.test(errorText(error)))
          return;
        throw error;
      }
    },
    receipt: async (hash) => {
      try {
        const receipt = await client.getTransactionReceipt({ hash });
        return { blockNumber: Number(receipt.blockNumber), success: receipt.status === 'success' };
      } catch (error) {
        if (error instanceof TransactionReceiptNotFoundError) return null;
        throw error;
      }
    },
    known: async (hash) => {
      try {
        await client.getTransaction({ hash });
        return true;
      } catch (error) {
        if (error instanceof TransactionNotFoundError) return false;
        throw error;
      }
    },
    head: async () => Number(await client.getBlockNumber({ cacheTime: 0 })),
    transaction: async (hash) => {
      try {
        const tx = await client.getTransaction({ hash });
        if (tx.blockNumber === null) return null;
        return { from: tx.from, to: tx.to, input: tx.input, blockNumber: Number(tx.blockNumber) };
      } catch (error) {
        if (error instanceof TransactionNotFoundError) return null;
        throw error;
      }
    },
  };
}
