import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { existsSync, openAsBlob, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { CairnApiError, CairnClient } from './client.js';
import type { AuditEntry, Verification } from './types.js';
import { formatBytes, jobLine, uploadBar, type ProgressSink } from './cli-progress.js';

/**
 * Exit codes a script can rely on (README "Command line"): 0 done (for verify: verified), 1 verified as not
 * verified (any other verdict), 2 bad usage, 3 the API refused (a problem; its code is printed), 4 Cairn
 * unreachable.
 */
export const EXIT = { ok: 0, notVerified: 1, usage: 2, apiError: 3, unreachable: 4 } as const;

const VERIFIED = new Set(['verified_manifest_and_watermark_match', 'verified_manifest']);
// Verdicts that name a failure, not just an absence: shown in red rather than yellow.
const FAILED = new Set([
  'manifest_watermark_conflict',
  'anchor_mismatch',
  'manifest_content_modified',
  'manifest_tampered',
  'manifest_signer_revoked',
  'manifest_malformed',
]);
const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';

const USAGE = `cairn — the Cairn command line

  cairn login [--api-key KEY] [--base-url URL] [--tenant TENANT_ID]   store the key (reads it from stdin if not given)
  cairn sign <files…> --recipe ID [--metadata JSON]                   sign files; a summary table at the end
  cairn verify <file | asset_id | manifest_uri>                         the verdict, what it proves and does not
  cairn lookup <file>                                                   your signed assets this file is tied to
  cairn usage                                                           this month's meters
  cairn keys [list | create --scope S [--description D] | revoke KEY_ID] [--tenant TENANT_ID]
  cairn webhooks [list | create --url URL --event E… | delete ID | deliveries ID]
  cairn audit [--event-type T] [--since ISO] [--limit N] [--follow]

  --json on every command prints the API's JSON for scripts.
  CAIRN_API_KEY and CAIRN_BASE_URL override the stored login.
  Exit codes: 0 ok / verified, 1 not verified, 2 bad usage, 3 API error, 4 Cairn unreachable.
`;

class UsageError extends Error {}

interface StoredConfig {
  api_key?: string;
  base_url?: string;
  tenant_id?: string;
}

/** Where `cairn login` keeps its key: the platform's per-user config directory. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME ||
    (process.platform === 'win32' && env.APPDATA) ||
    (process.platform === 'darwin' ? join(homedir(), 'Library', 'Application Support') : join(homedir(), '.config'));
  return join(base, 'cairn', 'config.json');
}

async function readConfig(env: NodeJS.ProcessEnv): Promise<StoredConfig> {
  try {
    return JSON.parse(await readFile(configPath(env), 'utf8')) as StoredConfig;
  } catch {
    return {};
  }
}

async function writeConfig(env: NodeJS.ProcessEnv, config: StoredConfig): Promise<string> {
  const path = configPath(env);
  await mkdir(join(path, '..'), { recursive: true, mode: 0o700 });
  // Written to a private temporary file and renamed, so the key is never readable by others, even briefly.
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
  return path;
}

interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
  color: boolean;
  progress: ProgressSink;
}

/** A file on disk as a Blob read from the disk as it is sent: never whole in memory, whatever its size. */
async function fileBlob(path: string): Promise<Blob> {
  return openAsBlob(path);
}

/** Asks for a secret on the terminal without echoing it (the key never shows on screen or in scrollback). */
function promptHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    let answer = '';
    const done = (error?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(answer.trim());
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return done();
        if (ch === '\u0003') return done(new UsageError('Cancelled.'));
        if (ch === '\u007f' || ch === '\b') answer = answer.slice(0, -1);
        else answer += ch;
      }
    };
    stdin.on('data', onData);
  });
}

const paint = (on: boolean, code: number, text: string) => (on ? `\u001b[${code}m${text}\u001b[0m` : text);

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

function describeVerification(v: Verification, o: Output): string {
  const tone = VERIFIED.has(v.status) ? 32 : FAILED.has(v.status) ? 31 : 33;
  const lines = [
    paint(
      o.color,
      tone,
      `${VERIFIED.has(v.status) ? '✔ Verified' : FAILED.has(v.status) ? '✘ Not verified' : '• Not verified'} (${v.status})`,
    ),
    v.user_explanation,
  ];
  const c = v.claims ?? {};
  if (c.signed_by) lines.push(`Signed by:     ${c.signed_by}`);
  if (c.signing_key === 'tenant') lines.push(`Signing key:   the tenant's own key (bring your own key), not Cairn's`);
  if (c.signed_at) lines.push(`Signed on:     ${c.signed_at}`);
  if (c.ai_generated !== undefined)
    lines.push(`AI-generated:  ${c.ai_generated ? 'yes (declared by the signer)' : 'not declared'}`);
  if (c.generator) lines.push(`Generator:     ${c.generator}${c.model ? ` (${c.model})` : ''}`);
  if (v.confidence !== null) lines.push(`Confidence:    ${Math.round(v.confidence * 100)}%`);
  for (const m of v.matches) lines.push(`Came from:     ${m.verifier_url} (by ${m.via})`);
  lines.push('', 'What this proves:', ...(v.proves.length ? v.proves.map((p) => `  - ${p}`) : ['  (nothing)']));
  lines.push(
    'What this does not prove:',
    ...(v.does_not_prove.length ? v.does_not_prove.map((p) => `  - ${p}`) : ['  (nothing)']),
  );
  return lines.join('\n');
}

function auditLine(e: AuditEntry): string {
  return `${e.created_at}  ${e.event_type.padEnd(24)}  ${e.entry_id}  ${JSON.stringify(e.data)}`;
}

/** Runs one command line; answers the exit code. `io` and `env` are injectable so the CLI is testable in process too. */
export async function main(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io?: Partial<Output>,
): Promise<number> {
  const o: Output = {
    out: io?.out ?? ((line) => process.stdout.write(`${line}\n`)),
    err: io?.err ?? ((line) => process.stderr.write(`${line}\n`)),
    color: io?.color ?? (Boolean(process.stdout.isTTY) && !env.NO_COLOR),
    progress: io?.progress ?? {
      write: (text) => process.stderr.write(text),
      live: Boolean(process.stderr.isTTY) && env.TERM !== 'dumb',
    },
  };
  let json = false;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        'api-key': { type: 'string' },
        'base-url': { type: 'string' },
        tenant: { type: 'string' },
        recipe: { type: 'string' },
        metadata: { type: 'string' },
        scope: { type: 'string' },
        description: { type: 'string' },
        url: { type: 'string' },
        event: { type: 'string', multiple: true },
        'event-type': { type: 'string' },
        since: { type: 'string' },
        limit: { type: 'string' },
        follow: { type: 'boolean', short: 'f' },
        interval: { type: 'string' },
      },
    });
    json = values.json === true;
    const [command, ...args] = positionals;
    if (!command || values.help) {
      o.out(USAGE);
      return command || values.help ? EXIT.ok : EXIT.usage;
    }
    const stored = await readConfig(env);
    const str = (name: keyof typeof values): string | undefined => {
      const value = values[name];
      return typeof value === 'string' ? value : undefined;
    };
    const baseUrl = str('base-url') ?? env.CAIRN_BASE_URL ?? stored.base_url ?? DEFAULT_BASE_URL;
    const apiKey = str('api-key') ?? env.CAIRN_API_KEY ?? stored.api_key;
    const client = new CairnClient({ baseUrl, ...(apiKey ? { apiKey } : {}), userAgent: 'cairn-cli/0.1' });
    const print = (value: unknown, human: () => string) => o.out(json ? JSON.stringify(value, null, 2) : human());
    const tenantId = () => {
      const id = str('tenant') ?? env.CAIRN_TENANT_ID ?? stored.tenant_id;
      if (!id) throw new UsageError('Name the tenant: --tenant t_…, CAIRN_TENANT_ID, or `cairn login --tenant`.');
      return id;
    };

    switch (command) {
      case 'login': {
        // Asked for on a terminal (not echoed), so it never lands in the shell's history as --api-key would.
        const key =
          str('api-key') ??
          env.CAIRN_API_KEY ??
          (process.stdin.isTTY ? await promptHidden(`API key for ${baseUrl}: `) : await readStdin());
        if (!key)
          throw new UsageError('Give the key: --api-key KEY, CAIRN_API_KEY, or on stdin (echo "$KEY" | cairn login).');
        // Checked before it is stored: a mistyped key fails here, not on the first real command.
        const probe = new CairnClient({ baseUrl, apiKey: key });
        await probe.usage().catch((error: unknown) => {
          if (error instanceof CairnApiError && error.status === 403) return undefined; // a valid key without the read scope
          throw error;
        });
        const tenant = str('tenant') ?? stored.tenant_id;
        const path = await writeConfig(env, {
          api_key: key,
          base_url: baseUrl,
          ...(tenant ? { tenant_id: tenant } : {}),
        });
        print(
          { config: path, base_url: baseUrl },
          () => `Logged in to ${baseUrl}; key stored in ${path} (readable only by you).`,
        );
        return EXIT.ok;
      }
      case 'sign': {
        const recipe = str('recipe');
        if (!recipe || args.length === 0) throw new UsageError('Usage: cairn sign <files…> --recipe ID');
        const metadataText = str('metadata');
        let metadata: Record<string, unknown> | undefined;
        if (metadataText) {
          try {
            metadata = JSON.parse(metadataText) as Record<string, unknown>;
          } catch {
            throw new UsageError('--metadata must be a JSON object.');
          }
        }
        const results: Array<Record<string, unknown>> = [];
        let failed = 0;
        for (const [index, file] of args.entries()) {
          const label = `[${index + 1}/${args.length}] ${basename(file)}`;
          if (!existsSync(file) || !statSync(file).isFile()) {
            failed++;
            results.push({ file, error: { code: 'cli.file_not_found', detail: 'No such file.' } });
            o.err(`${label}: no such file`);
            continue;
          }
          const blob = await fileBlob(file);
          o.err(`${label}: uploading ${formatBytes(blob.size)}…`);
          try {
            const signed = await client.sign({
              file: blob,
              filename: basename(file),
              recipe,
              ...(metadata ? { metadata } : {}),
              onUploadProgress: uploadBar(o.progress, label),
              onJob: jobLine(o.progress, label),
            });
            o.err(`${label}: signed ${signed.asset_id}`);
            results.push({ file, ...signed });
          } catch (error) {
            if (!(error instanceof CairnApiError)) throw error;
            failed++;
            o.err(`${label}: ${error.code} ${error.problem.detail}`);
            results.push({ file, error: error.problem });
          }
        }
        print(results, () =>
          table([
            ['FILE', 'RESULT', 'ASSET', 'VERIFY PAGE'],
            ...results.map((r) => [
              String(r.file),
              r.error ? `failed: ${String((r.error as { code: string }).code)}` : 'signed',
              typeof r.asset_id === 'string' ? r.asset_id : '',
              typeof r.verifier_url === 'string' ? r.verifier_url : '',
            ]),
          ]),
        );
        return failed ? EXIT.apiError : EXIT.ok;
      }
      case 'verify': {
        const target = args[0];
        if (!target || args.length > 1) throw new UsageError('Usage: cairn verify <file | asset_id | manifest_uri>');
        const result = existsSync(target)
          ? await client.verify(
              { file: await fileBlob(target), filename: basename(target) },
              { onUploadProgress: uploadBar(o.progress, basename(target)) },
            )
          : /^https?:\/\//.test(target)
            ? await client.verify({ manifestUri: target })
            : /^a_[0-9A-Z]+$/.test(target)
              ? await client.verify({ assetId: target })
              : undefined;
        if (!result) throw new UsageError(`${target}: not a file, an asset id (a_…) or a manifest URI (https://…).`);
        print(result, () => describeVerification(result, o));
        return VERIFIED.has(result.status) ? EXIT.ok : EXIT.notVerified;
      }
      case 'lookup': {
        const file = args[0];
        if (!file || !existsSync(file)) throw new UsageError('Usage: cairn lookup <file>');
        const result = await client.lookup({ file: await fileBlob(file), filename: basename(file) });
        print(result, () =>
          result.matches.length
            ? table([
                ['ASSET', 'SIMILARITY', 'BY', 'VERIFY PAGE'],
                ...result.matches.map((m) => [m.asset_id, `${Math.round(m.similarity * 100)}%`, m.alg, m.verifier_url]),
              ])
            : 'No signed asset of yours matches this file.',
        );
        return EXIT.ok;
      }
      case 'usage': {
        const usage = await client.usage();
        print(usage, () =>
          [
            `Period ${usage.period_start} – ${usage.period_end}; spend $${usage.spend_usd}${usage.spending_cap_usd !== null ? ` of a $${usage.spending_cap_usd} cap` : ''}`,
            table([
              ['METER', 'USED', 'LIMIT'],
              ...Object.entries(usage.meters).map(([name, m]) => [
                name,
                String(m.used),
                m.limit === null ? 'unlimited' : String(m.limit),
              ]),
            ]),
          ].join('\n'),
        );
        return EXIT.ok;
      }
      case 'keys': {
        const [action = 'list', id] = args;
        if (action === 'list') {
          const keys = await client.keys.list(tenantId());
          print(keys, () =>
            table([
              ['KEY', 'SCOPE', 'STATUS', 'EXPIRES', 'DESCRIPTION'],
              ...keys.map((k) => [k.key_id, k.scope, k.status, k.expires_at ?? '-', k.description ?? '']),
            ]),
          );
          return EXIT.ok;
        }
        if (action === 'create') {
          const scope = str('scope');
          if (!scope) throw new UsageError('Usage: cairn keys create --scope admin|sign|verify|read [--description D]');
          const description = str('description');
          const key = await client.keys.create(tenantId(), { scope, ...(description ? { description } : {}) });
          print(key, () => `Created ${key.key_id} (${key.scope}). The key, shown once:\n${key.api_key ?? ''}`);
          return EXIT.ok;
        }
        if (action === 'revoke' && id) {
          const key = await client.keys.revoke(tenantId(), id);
          print(key, () => `Revoked ${key.key_id}.`);
          return EXIT.ok;
        }
        throw new UsageError('Usage: cairn keys [list | create --scope S | revoke KEY_ID]');
      }
      case 'webhooks': {
        const [action = 'list', id] = args;
        if (action === 'list') {
          const hooks = await client.webhooks.list();
          print(hooks, () =>
            hooks.length
              ? table([['WEBHOOK', 'URL', 'EVENTS'], ...hooks.map((h) => [h.webhook_id, h.url, h.events.join(',')])])
              : 'No webhooks.',
          );
          return EXIT.ok;
        }
        if (action === 'create') {
          const url = str('url');
          const events = values.event ?? [];
          if (!url || events.length === 0)
            throw new UsageError('Usage: cairn webhooks create --url URL --event job.completed [--event …]');
          const description = str('description');
          const hook = await client.webhooks.create({ url, events, ...(description ? { description } : {}) });
          print(
            hook,
            () => `Created ${hook.webhook_id} → ${hook.url}. Its signing secret, shown once:\n${hook.secret ?? ''}`,
          );
          return EXIT.ok;
        }
        if (action === 'delete' && id) {
          await client.webhooks.delete(id);
          print({ deleted: id }, () => `Deleted ${id}.`);
          return EXIT.ok;
        }
        if (action === 'deliveries' && id) {
          const deliveries = await client.webhooks.deliveries(id);
          print(deliveries, () =>
            table([
              ['DELIVERY', 'EVENT', 'STATUS', 'ATTEMPTS'],
              ...deliveries.map((d) => [d.delivery_id, d.event_type, d.status, String(d.attempts)]),
            ]),
          );
          return EXIT.ok;
        }
        throw new UsageError('Usage: cairn webhooks [list | create --url URL --event E | delete ID | deliveries ID]');
      }
      case 'audit': {
        const limitText = str('limit');
        const limit = limitText === undefined ? 50 : Number(limitText);
        if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer.');
        const eventType = str('event-type');
        const since = str('since');
        const query = { ...(eventType ? { eventType } : {}), ...(since ? { since } : {}) };
        // Newest first from the API; a terminal reads oldest first, so each batch is printed reversed.
        const batch: AuditEntry[] = [];
        for await (const entry of client.audit({ ...query, pageSize: Math.min(limit, 1000) })) {
          batch.push(entry);
          if (batch.length >= limit) break;
        }
        const emit = (entries: AuditEntry[]) => {
          for (const e of [...entries].reverse()) o.out(json ? JSON.stringify(e) : auditLine(e));
        };
        emit(batch);
        if (!values.follow) return EXIT.ok;
        // --follow: poll for entries newer than the newest seen, until interrupted. JSON is one entry per line.
        const seen = new Set(batch.map((e) => e.entry_id));
        const interval = Number(str('interval') ?? 2000);
        for (;;) {
          await new Promise((resolve) => setTimeout(resolve, interval));
          const fresh: AuditEntry[] = [];
          for await (const entry of client.audit({ ...query, pageSize: 100 })) {
            if (seen.has(entry.entry_id)) break;
            fresh.push(entry);
          }
          for (const e of fresh) seen.add(e.entry_id);
          emit(fresh);
        }
      }
      default:
        throw new UsageError(`Unknown command "${command}".\n\n${USAGE}`);
    }
  } catch (error) {
    if (
      error instanceof UsageError ||
      (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))
    ) {
      o.err(error.message);
      return EXIT.usage;
    }
    if (error instanceof CairnApiError) {
      if (json) o.out(JSON.stringify({ error: error.problem }, null, 2));
      o.err(
        paint(
          o.color,
          31,
          `Error ${error.code} (HTTP ${error.status}): ${error.problem.detail || error.problem.title}`,
        ),
      );
      return EXIT.apiError;
    }
    const cause =
      error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    o.err(`Cairn is unreachable or answered unexpectedly: ${cause}`);
    return EXIT.unreachable;
  }
}
