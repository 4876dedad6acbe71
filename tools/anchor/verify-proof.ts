/**
 * Verifies a Cairn anchor inclusion proof against the chain, trusting nothing but the proof, the manifest digest
 * and a JSON-RPC endpoint (any node of the chain: your own, a public one).
 *
 *   node --import tsx tools/anchor/verify-proof.ts --proof proof.json --digest <sha256 hex of the manifest store> \
 *        --rpc http://127.0.0.1:8545 [--from 0xAnchoringAddress] [--confirmations 1]
 *
 * proof.json is the body of GET /v1/anchors/{batch_id}/proofs/{asset_id}. The digest is computed by you:
 * `sha256sum manifest.c2pa` over the manifest store bytes (GET /v1/manifests/{manifest_id}).
 *
 * Algorithm (RFC 6962 / RFC 9162 section 2.1.3.2):
 *   1. leaf = SHA-256(0x00 || digest), the 32 digest bytes; the proof's leaf_hash, if present, must equal it.
 *   2. fn = leaf_index, sn = tree_size - 1, r = leaf; for each p in audit_path (bottom-up):
 *        if sn = 0: fail.
 *        if fn is odd or fn = sn: r = SHA-256(0x01 || p || r); if fn is even, shift fn and sn right until fn is
 *          odd or 0.
 *        else: r = SHA-256(0x01 || r || p).
 *        shift fn and sn right by one.
 *      Valid only if sn = 0 at the end and r = merkle_root.
 *   3. eth_chainId of the endpoint must equal chain_id; eth_getTransactionByHash(tx_hash) must exist, be mined in
 *      block_number, be sent by an account to itself (and by --from, if given), and carry exactly the 32 bytes of
 *      merkle_root as its input; its receipt must be successful and have at least --confirmations blocks on it.
 * Exit code 0 when every check passes, 1 otherwise; a JSON report on stdout.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { createPublicClient, http, type Hex } from 'viem';
import { fromHex, leafHash, toHex, verifyInclusion } from '@cairn/merkle';

export interface AnchorProof {
  batch_id: string;
  merkle_root: string;
  chain_id: number;
  tx_hash: string;
  block_number: number;
  leaf_index: number;
  tree_size: number;
  audit_path: string[];
  leaf_hash?: string;
  manifest_digest?: string;
}

export interface VerifyReport {
  valid: boolean;
  checks: Record<string, boolean>;
  details: Record<string, unknown>;
}

export async function verifyAnchorProof(
  proof: AnchorProof,
  manifestDigestHex: string,
  rpcUrl: string,
  options: { from?: string; confirmations?: number } = {},
): Promise<VerifyReport> {
  const checks: Record<string, boolean> = {};
  const details: Record<string, unknown> = {};
  const digest = fromHex(manifestDigestHex.trim().toLowerCase(), 32);
  const leaf = leafHash(digest);
  checks.leaf_hash = proof.leaf_hash === undefined || proof.leaf_hash.toLowerCase() === toHex(leaf);
  const root = fromHex(proof.merkle_root, 32);
  checks.inclusion = verifyInclusion(
    leaf,
    proof.leaf_index,
    proof.tree_size,
    proof.audit_path.map((p) => fromHex(p, 32)),
    root,
  );

  const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 1, timeout: 10_000 }) });
  const chainId = await client.getChainId();
  checks.chain_id = chainId === Number(proof.chain_id);
  details.chain_id = chainId;
  try {
    const tx = await client.getTransaction({ hash: proof.tx_hash as Hex });
    const receipt = await client.getTransactionReceipt({ hash: proof.tx_hash as Hex });
    const head = await client.getBlockNumber({ cacheTime: 0 });
    checks.calldata_is_root = tx.input.toLowerCase() === toHex(root);
    checks.self_transaction = tx.to !== null && tx.to.toLowerCase() === tx.from.toLowerCase();
    if (options.from) checks.sender = tx.from.toLowerCase() === options.from.toLowerCase();
    checks.block_number = tx.blockNumber !== null && Number(tx.blockNumber) === Number(proof.block_number);
    checks.receipt_success = receipt.status === 'success';
    const confirmations = Number(head - receipt.blockNumber) + 1;
    checks.confirmations = confirmations >= (options.confirmations ?? 1);
    Object.assign(details, { from: tx.from, block_number: Number(receipt.blockNumber), confirmations });
  } catch (error) {
    checks.transaction_found = false;
    details.error = error instanceof Error ? error.message.split('\n')[0] : String(error);
  }
  return { valid: Object.values(checks).every(Boolean), checks, details };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      proof: { type: 'string' },
      digest: { type: 'string' },
      rpc: { type: 'string' },
      from: { type: 'string' },
      confirmations: { type: 'string' },
    },
  });
  if (!values.proof || !values.digest || !values.rpc) {
    process.stderr.write(
      'usage: verify-proof.ts --proof proof.json --digest <sha256 hex> --rpc <url> [--from 0x…] [--confirmations N]\n',
    );
    process.exit(2);
  }
  const proof = JSON.parse(await readFile(values.proof, 'utf8')) as AnchorProof;
  const report = await verifyAnchorProof(proof, values.digest, values.rpc, {
    ...(values.from ? { from: values.from } : {}),
    ...(values.confirmations ? { confirmations: Number(values.confirmations) } : {}),
  });
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.exit(report.valid ? 0 : 1);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
