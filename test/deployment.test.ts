/**
 * The deployment files (the root Dockerfile, charts/cairn, skaffold.yaml) must cover exactly the
 * fleet of packages/config/src/fleet.ts: every service, with its default ports, and nothing else.
 * No YAML library: values.yaml is kept to plain two-space mappings that the small reader below
 * understands, and skaffold.yaml is read line by line.
 */
import { describe, it, expect } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
// '@cairn/config' is not a dependency of the workspace root, so import its source directly.
import {
  commonEnvShape,
  DEFAULT_GATEWAY_HTTP_PORT,
  DEFAULT_PORTS,
  identityProblems,
  loadConfig,
  SERVICE_NAMES,
  type ServiceName,
} from '../packages/config/src/index.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (rel: string): string => readFileSync(join(ROOT, rel), 'utf8');
const sorted = (xs: Iterable<string>): string[] => [...xs].sort();

// ---------------------------------------------------------------------------------------------------
// A reader for the YAML subset values.yaml keeps to: nested `key: value` mappings by indentation, with
// scalar values (plain or quoted, `{}`/`[]` kept as text). A list or block scalar is skipped whole and
// its key set to the marker '[list]' or '[block]', so adding one elsewhere in the file does not break this.

type YamlMap = { [key: string]: YamlValue };
type YamlValue = string | YamlMap;

function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) {
      return line.slice(0, i);
    }
  }
  return line;
}

function unquote(value: string): string {
  if (/^".*"$/.test(value)) return JSON.parse(value) as string;
  if (/^'.*'$/.test(value)) return value.slice(1, -1).replace(/''/g, "'");
  return value;
}

function parseSimpleYaml(text: string): YamlMap {
  const root: YamlMap = {};
  const stack: { indent: number; map: YamlMap }[] = [{ indent: -1, map: root }];
  let skipDeeperThan: number | null = null; // inside a skipped list or block scalar
  let skipListAt: number | null = null; // further `- ` items of a skipped list at this indent

  text.split(/\r?\n/).forEach((raw, index) => {
    const line = stripComment(raw).replace(/\s+$/, '');
    if (line.trim() === '' || line === '---') return;
    const indent = line.length - line.trimStart().length;
    const content = line.trim();

    if (skipDeeperThan !== null) {
      if (indent > skipDeeperThan || (indent === skipListAt && content.startsWith('-'))) return;
      skipDeeperThan = null;
      skipListAt = null;
    }

    if (content === '-' || content.startsWith('- ')) {
      // A list under the key just opened (indented or not): mark that key and skip the whole list.
      while (stack.length > 1 && stack[stack.length - 1]!.indent > indent) stack.pop();
      const opened = stack[stack.length - 1]!;
      if (stack.length < 2 || Object.keys(opened.map).length > 0)
        throw new Error(`line ${index + 1}: list item without a key`);
      const owner = stack[stack.length - 2]!.map;
      const key = Object.keys(owner).find((k) => owner[k] === opened.map)!;
      owner[key] = '[list]';
      stack.pop();
      skipDeeperThan = indent;
      skipListAt = indent;
      return;
    }

    while (stack.length > 1 && stack[stack.length - 1]!.indent >= indent) stack.pop();
    const parent = stack[stack.length - 1]!;

    const m = /^("[^"]*"|'[^']*'|[^\s:][^:]*?)\s*:(?:\s+(.*))?$/.exec(content);
    if (!m) throw new Error(`line ${index + 1}: not a 'key: value' line: ${raw}`);
    const key = unquote(m[1]!);
    const value = (m[2] ?? '').trim();
    if (value === '') {
      const child: YamlMap = {};
      parent.map[key] = child;
      stack.push({ indent, map: child });
    } else if (/^[|>][-+0-9]*$/.test(value)) {
      parent.map[key] = '[block]';
      skipDeeperThan = indent;
    } else {
      parent.map[key] = unquote(value);
    }
  });
  return root;
}

function mapAt(value: YamlValue | undefined, where: string): YamlMap {
  if (value === undefined || typeof value === 'string') throw new Error(`${where} is not a mapping`);
  return value;
}

function scalarAt(value: YamlValue | undefined, where: string): string {
  if (typeof value !== 'string') throw new Error(`${where} is not a scalar`);
  return value;
}

// ---------------------------------------------------------------------------------------------------

describe('the reader of values.yaml', () => {
  it('reads nested mappings, quoted scalars and comments, and skips lists', () => {
    const doc = parseSimpleYaml(
      [
        '# comment',
        'a:',
        '  b: "x # y"   # trailing',
        "  c: 'it''s'",
        '  list:',
        '    - one',
        '    - two: 2',
        '      three: 3',
        '  d: 4',
        'e: {}',
      ].join('\n'),
    );
    expect(doc).toEqual({ a: { b: 'x # y', c: "it's", list: '[list]', d: '4' }, e: '{}' });
  });
});

describe('the service image: one Dockerfile, the build argument SERVICE selects the service', () => {
  const text = read('Dockerfile');
  const instructions = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));

  it('is the only Dockerfile: no service keeps its own', () => {
    for (const dir of readdirSync(join(ROOT, 'services')))
      expect({ dir, own: existsSync(join(ROOT, 'services', dir, 'Dockerfile')) }).toEqual({ dir, own: false });
  });

  it('is multi-stage and runs dist/main.js as the unprivileged node user', () => {
    expect(instructions.filter((l) => /^FROM\s/i.test(l)).length).toBeGreaterThanOrEqual(2);
    // The last USER (the one the runtime stage runs as) is the image's unprivileged `node` user.
    const users = instructions.filter((l) => /^USER\s/i.test(l)).map((l) => l.split(/\s+/)[1]!);
    expect(users[users.length - 1]).toBe('node');
    const cmds = instructions.filter((l) => /^CMD\s/i.test(l));
    expect(cmds[cmds.length - 1]).toMatch(/^CMD\s+\[\s*"node"\s*,\s*"dist\/main\.js"\s*\]$/);
    expect(text).toMatch(/^ENV NODE_ENV=production/m);
    expect(text).toMatch(/^HEALTHCHECK\s.*\\$\n\s*CMD \["node", "-e", ".*\/healthz/m);
  });

  it('names no service and no port: SERVICE has no default, ports come from the fleet or the environment', () => {
    expect(instructions).toContain('ARG SERVICE');
    expect(text).not.toMatch(/^ARG SERVICE=/m);
    const ports = [...Object.values(DEFAULT_PORTS).flatMap((p) => [p.grpc, p.ops]), DEFAULT_GATEWAY_HTTP_PORT];
    for (const line of instructions) {
      for (const service of SERVICE_NAMES)
        expect({ line, service: new RegExp(`\\b${service}\\b`).test(line) }).toEqual({ line, service: false });
      for (const port of ports) expect({ line, port: line.includes(String(port)) }).toEqual({ line, port: false });
    }
    // Every service is bundled before the argument is read (one shared build stage); the service is deployed by
    // it, and its default ops port (for the HEALTHCHECK) is read from packages/config/src/fleet.ts at build time.
    expect(text.indexOf('RUN node tools/dev/build.mjs\n')).toBeGreaterThan(-1);
    expect(text.indexOf('RUN node tools/dev/build.mjs\n')).toBeLessThan(text.indexOf('ARG SERVICE\nRUN'));
    expect(text).toContain('pnpm --filter "@cairn/${SERVICE}" deploy');
    expect(text).toMatch(/packages\/config\/src\/fleet\.ts.*DEFAULT_PORTS.*"\$\{SERVICE\}" > \/out\/ops-port/);
  });

  it('.dockerignore keeps installs, builds and generated code out of the context', () => {
    const lines = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of ['node_modules', 'dist', '.git', 'packages/proto/src/gen', 'tools/out', '.cairn']) {
      expect(lines.some((l) => l === entry || l === `**/${entry}`)).toBe(true);
    }
  });
});

describe('Helm chart: charts/cairn', () => {
  const values = parseSimpleYaml(read('charts/cairn/values.yaml'));
  const services = mapAt(values.services, 'services');

  it('Chart.yaml names the chart and versions', () => {
    const chart = parseSimpleYaml(read('charts/cairn/Chart.yaml'));
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'cairn', version: '0.1.0', appVersion: '0.1.0' });
  });

  it('values.yaml `services:` has exactly the fleet (no drift either way)', () => {
    expect(sorted(Object.keys(services))).toEqual(sorted(SERVICE_NAMES));
  });

  it.each([...SERVICE_NAMES])('values.yaml services.%s has the default ports and the expected fields', (service) => {
    const entry = mapAt(services[service], `services.${service}`);
    const ports = mapAt(entry.ports, `services.${service}.ports`);
    expect(Number(scalarAt(ports.grpc, 'ports.grpc'))).toBe(DEFAULT_PORTS[service].grpc);
    expect(Number(scalarAt(ports.ops, 'ports.ops'))).toBe(DEFAULT_PORTS[service].ops);
    if (service === 'gateway') expect(Number(scalarAt(ports.http, 'ports.http'))).toBe(DEFAULT_GATEWAY_HTTP_PORT);
    else expect(ports.http).toBeUndefined();

    expect(['true', 'false']).toContain(scalarAt(entry.enabled, 'enabled'));
    expect(Number(scalarAt(entry.replicas, 'replicas'))).toBeGreaterThanOrEqual(0);
    const image = mapAt(entry.image, `services.${service}.image`);
    expect(scalarAt(image.repository, 'image.repository')).toBe(`cairn-${service}`);
    expect(scalarAt(image.tag, 'image.tag')).not.toBe('');
    expect(entry.resources).toBeDefined();
    expect(entry.env).toBeDefined();
  });

  it('global values: production env, connection URLs, public URL, gateway Service type, Ingress off', () => {
    const global = mapAt(values.global, 'global');
    expect(mapAt(global.env, 'global.env').CAIRN_ENV).toBe('production');
    for (const k of ['redis', 'nats']) expect(mapAt(values[k], k).url).toMatch(/^\w+:\/\//);
    // One database URL per service, each naming the service's own role.
    const urls = mapAt(mapAt(values.database, 'database').urls, 'database.urls');
    expect(sorted(Object.keys(urls))).toEqual(sorted(SERVICE_NAMES));
    for (const service of SERVICE_NAMES)
      expect(new URL(scalarAt(urls[service], `database.urls.${service}`)).username).toBe(`cairn_${service}`);
    expect(values.publicBaseUrl).toMatch(/^https?:\/\//);
    expect(mapAt(values.gatewayService, 'gatewayService').type).toBe('ClusterIP');
    expect(mapAt(values.ingress, 'ingress').enabled).toBe('false');
    expect(values).toHaveProperty('existingSecret');
  });

  const templates = [
    '_helpers.tpl',
    'deployment.yaml',
    'service.yaml',
    'configmap.yaml',
    'secret.yaml',
    'ingress.yaml',
    'NOTES.txt',
    'networkpolicy.yaml',
    'nats-auth.yaml',
  ];

  it.each(templates)('templates/%s has balanced template actions', (file) => {
    const text = read(`charts/cairn/templates/${file}`).replace(/\{\{-?\s*\/\*[\s\S]*?\*\/\s*-?\}\}/g, '');
    expect((text.match(/\{\{/g) ?? []).length).toBe((text.match(/\}\}/g) ?? []).length);
    const opens = (text.match(/\{\{-?\s*(if|range|with|define)\b/g) ?? []).length;
    const ends = (text.match(/\{\{-?\s*end\b/g) ?? []).length;
    expect(ends).toBe(opens);
  });

  it('the Deployment template ranges over .Values.services, with probes, security and peer addresses', () => {
    const t = read('charts/cairn/templates/deployment.yaml');
    expect(t).toMatch(/range\s+\$name,\s*\$svc\s*:=\s*\.Values\.services\b/);
    expect(t).toMatch(/readinessProbe:\s*\n\s*httpGet:\s*\n\s*path: \/readyz\s*\n\s*port: ops/);
    expect(t).toMatch(/livenessProbe:\s*\n\s*httpGet:\s*\n\s*path: \/healthz\s*\n\s*port: ops/);
    expect(t).toMatch(/terminationGracePeriodSeconds:/);
    expect(t).toMatch(/runAsNonRoot: true/);
    expect(t).toMatch(/runAsUser: 1000/);
    expect(t).toMatch(/readOnlyRootFilesystem: true/);
    expect(t).toMatch(/allowPrivilegeEscalation: false/);
    expect(t).toMatch(/mountPath: \/tmp/);
    expect(t).toMatch(/emptyDir: \{\}/);
    expect(t).toMatch(/prometheus\.io\/scrape: "true"/);
    expect(t).toMatch(/prometheus\.io\/port: \{\{ \$svc\.ports\.ops \| quote \}\}/);
    expect(t).toMatch(/configMapRef:/);
    expect(t).toMatch(/secretKeyRef:/);
    expect(t).toMatch(/name: GRPC_HOST\s*\n\s*value: "0\.0\.0\.0"/);
    expect(t).toMatch(/range\s+\$peer,\s*\$peerSvc\s*:=\s*\$\.Values\.services[\s\S]*cairn\.grpcAddrVar/);
    expect(read('charts/cairn/templates/_helpers.tpl')).toMatch(/printf "%s_GRPC_ADDR" \(upper \.\)/);
  });

  it('the Service template ranges over .Values.services with ports grpc, ops and http', () => {
    const t = read('charts/cairn/templates/service.yaml');
    expect(t).toMatch(/range\s+\$name,\s*\$svc\s*:=\s*\.Values\.services\b/);
    for (const port of ['grpc', 'ops', 'http']) expect(t).toMatch(new RegExp(`- name: ${port}\\n`));
    expect(read('charts/cairn/templates/_helpers.tpl')).toMatch(/printf "cairn-%s" \./);
  });

  it('the Secret is skipped when existingSecret is set', () => {
    const t = read('charts/cairn/templates/secret.yaml');
    expect(t).toMatch(/\{\{- if not \.Values\.existingSecret \}\}/);
    for (const key of ['DATABASE_URL_{{ upper $name }}', 'REDIS_URL', 'NATS_URL', 'CAIRN_DATA_KEY'])
      expect(t).toContain(`${key}:`);
  });
});

// ---------------------------------------------------------------------------------------------------
// What production mode requires of each service, against what the chart gives each service's container.

const chartValues = parseSimpleYaml(read('charts/cairn/values.yaml'));
const chartServices = mapAt(chartValues.services, 'services');

/** Each `- name: X` of the Deployment's container env, with the template conditions around it. */
interface ChartEnvEntry {
  name: string;
  only?: string;
  port?: string;
  optional?: boolean;
  secret?: { name: string; key: string };
}

function deploymentEnv(): ChartEnvEntry[] {
  const lines = read('charts/cairn/templates/deployment.yaml').split('\n');
  const start = lines.findIndex((l) => /^\s+env:\s*$/.test(l));
  const end = lines.findIndex((l, i) => i > start && /^\s+startupProbe:\s*$/.test(l));
  const stack: Array<{ only?: string; port?: string; optional?: boolean }> = [];
  const entries: ChartEnvEntry[] = [];
  for (let i = start + 1; i < end; i++) {
    const line = lines[i]!.trim();
    const only = /^\{\{-?\s*if eq \$name "(\w+)"\s*-?\}\}$/.exec(line);
    const port = /^\{\{-?\s*if \$svc\.ports\.(\w+)\s*-?\}\}$/.exec(line);
    if (only) stack.push({ only: only[1]! });
    else if (port) stack.push({ port: port[1]! });
    // Any other condition (with, if not, range over values) may render nothing: what it holds is not counted.
    else if (/^\{\{-?\s*(if|with|range)\b/.test(line)) stack.push({ optional: true });
    else if (/^\{\{-?\s*end\b/.test(line)) stack.pop();
    const named = /^- name: ([A-Z][A-Z0-9_]*)$/.exec(line);
    if (!named) continue;
    const entry: ChartEnvEntry = { name: named[1]!, ...(Object.assign({}, ...stack) as Omit<ChartEnvEntry, 'name'>) };
    if (/^valueFrom:/.test(lines[i + 1]?.trim() ?? '')) {
      const block = lines.slice(i + 2, i + 7).map((l) => l.trim());
      const secretName = block.find((l) => l.startsWith('name: '))?.slice(6);
      const key = block.find((l) => l.startsWith('key: '))?.slice(5);
      if (block.includes('optional: true')) entry.optional = true;
      if (secretName && key) entry.secret = { name: secretName, key };
    }
    entries.push(entry);
  }
  return entries;
}

/** The environment variables the chart gives `service`'s container (the shared ConfigMap, its env, its own values env). */
function chartEnvFor(service: ServiceName): Map<string, ChartEnvEntry | 'configmap' | 'values'> {
  const provided = new Map<string, ChartEnvEntry | 'configmap' | 'values'>();
  const globalEnv = mapAt(mapAt(chartValues.global, 'global').env, 'global.env');
  for (const [key, value] of Object.entries(globalEnv)) if (value !== '') provided.set(key, 'configmap');
  const entry = mapAt(chartServices[service], `services.${service}`);
  const ports = mapAt(entry.ports, 'ports');
  for (const env of deploymentEnv()) {
    if (env.optional) continue;
    if (env.only !== undefined && env.only !== service) continue;
    if (env.port !== undefined && ports[env.port] === undefined) continue;
    provided.set(env.name, env);
  }
  const own = entry.env;
  if (own !== undefined && typeof own !== 'string') for (const key of Object.keys(own)) provided.set(key, 'values');
  return provided;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`;
    if (statSync(join(ROOT, rel)).isDirectory()) return sourceFiles(rel);
    return rel.endsWith('.ts') ? [rel] : [];
  });
}

const ENV_NAME = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g;

/**
 * What production mode requires of `service`: the common identity checks (packages/config identityProblems,
 * run with the chart's GRPC_HOST and NATS URL; of "A (or B)" alternatives the first), the variables its own
 * code refuses to start without in production (`throw new Error('X is required…')`, or the anchor's refusal
 * of the public development key), and the connection URLs whose loopback defaults mean nothing in a cluster.
 */
function requiredInProduction(service: ServiceName): string[] {
  const chartGrpcHost = (/name: GRPC_HOST\s*\n\s*value: "([^"]+)"/.exec(
    read('charts/cairn/templates/deployment.yaml'),
  ) ?? [])[1]!;
  const common = identityProblems({
    ...loadConfig(commonEnvShape, {}),
    CAIRN_ENV: 'production',
    GRPC_HOST: chartGrpcHost,
    NATS_URL: scalarAt(mapAt(chartValues.nats, 'nats').url, 'nats.url'),
  });
  const fromCommon = common.flatMap(
    (problem) =>
      problem
        .replace(/\(or [^)]*\)/g, '')
        .split(':')[0]!
        .match(ENV_NAME) ?? [],
  );
  const fromService = sourceFiles(`services/${service}/src`).flatMap((file) =>
    [
      ...read(file).matchAll(
        /throw new Error\(\s*['"`]([A-Z][A-Z0-9_]+) is (?:required|the public hardhat development key)/g,
      ),
    ].map((m) => m[1]!),
  );
  return sorted(new Set(['DATABASE_URL', 'REDIS_URL', 'NATS_URL', ...fromCommon, ...fromService]));
}

describe('Helm chart: production mode has what it requires', () => {
  it("the requirements are read from the code: the identity checks and each service's own refusals", () => {
    // Not a list kept here: if a check is renamed away, this notices before the per-service tests pass vacuously.
    expect(requiredInProduction('gateway')).toEqual(
      expect.arrayContaining([
        'GRPC_TLS_CA',
        'GRPC_TLS_CERT',
        'GRPC_TLS_KEY',
        'NATS_USER',
        'NATS_PASSWORD',
        'CAIRN_DATA_KEY',
      ]),
    );
    expect(SERVICE_NAMES.flatMap((s) => requiredInProduction(s)).length).toBeGreaterThan(SERVICE_NAMES.length * 8);
  });

  it.each([...SERVICE_NAMES])('%s: every variable production requires is provided by the chart', (service) => {
    const provided = chartEnvFor(service);
    expect(requiredInProduction(service).filter((name) => !provided.has(name))).toEqual([]);
    expect(provided.get('CAIRN_ENV')).toBe('configmap');
    expect(mapAt(mapAt(chartValues.global, 'global').env, 'global.env').CAIRN_ENV).toBe('production');
  });

  it.each([...SERVICE_NAMES])(
    "%s: each secret it reads is a key the chart's Secrets hold, and its database URL is its own role",
    (service) => {
      const secretTemplates =
        read('charts/cairn/templates/secret.yaml') + read('charts/cairn/templates/nats-auth.yaml');
      for (const entry of chartEnvFor(service).values()) {
        if (typeof entry === 'string' || !entry.secret) continue;
        // The Secret templates write per-service keys as PREFIX_{{ upper $name }} inside a range over the services.
        const key = entry.secret.key.replace('{{ upper $name }}', '{{ upper $name }}');
        expect({
          env: entry.name,
          key,
          held:
            secretTemplates.includes(`${key}:`) ||
            (secretTemplates.includes(`{{ $key }}:`) && /CAIRN_NATS_PASSWORD_/.test(key)),
        }).toEqual({ env: entry.name, key, held: true });
      }
      const database = chartEnvFor(service).get('DATABASE_URL');
      expect(typeof database === 'object' && database.secret?.key).toBe('DATABASE_URL_{{ upper $name }}');
    },
  );

  it('TRUST_PROXY is set for the gateway (the ingress), gRPC binds 0.0.0.0 only with the TLS files, and the certificates come from a Secret', () => {
    expect(chartEnvFor('gateway').has('TRUST_PROXY')).toBe(true);
    expect(chartValues.trustProxy).not.toBe('');
    const t = read('charts/cairn/templates/deployment.yaml');
    expect(t).toMatch(/secretName: \{\{ \$\.Values\.grpcTls\.secretName \}\}/);
    for (const service of SERVICE_NAMES)
      for (const name of ['GRPC_HOST', 'GRPC_TLS_CA', 'GRPC_TLS_CERT', 'GRPC_TLS_KEY', 'NATS_USER', 'NATS_PASSWORD'])
        expect(chartEnvFor(service).has(name)).toBe(true);
  });

  it("the NetworkPolicy denies ingress to the chart's pods but gRPC among them, the gateway's HTTP and the signer's OCSP", () => {
    const t = read('charts/cairn/templates/networkpolicy.yaml');
    const docs = t.split(/^---$/m);
    expect(docs[0]).toMatch(/policyTypes:\s*\n\s*- Ingress\s*\n\s*ingress: \[\]/);
    expect(t).toMatch(
      /- from:\s*\n\s*- podSelector:\s*\n\s*matchLabels:\s*\n\s*app\.kubernetes\.io\/part-of: cairn\s*\n\s*ports:\s*\n\s*- port: grpc/,
    );
    // Open from anywhere (no `from:`): exactly the gateway's http and the signer's ocsp.
    const open = docs
      .filter((d) => /ingress:\s*\n\s*- ports:/.test(d))
      .map((d) => [/"name" "(\w+)"/.exec(d)?.[1], /- port: (\w+)/.exec(d)?.[1]]);
    expect(open).toEqual([
      ['gateway', 'http'],
      ['signer', 'ocsp'],
    ]);
  });

  it("ships the NATS authorization file the services' users and permissions come from", () => {
    expect(read('charts/cairn/templates/nats-auth.yaml')).toContain('.Files.Get "files/nats-authorization.conf"');
    const conf = read('charts/cairn/files/nats-authorization.conf');
    for (const service of SERVICE_NAMES) expect(conf).toContain(`user: "cairn-${service}"`);
  });
});

describe('skaffold.yaml', () => {
  const lines = read('skaffold.yaml').split('\n');

  interface Artifact {
    image: string;
    context?: string;
    dockerfile?: string;
    service?: string;
  }
  const artifacts: Artifact[] = [];
  let inArtifacts = false;
  for (const line of lines) {
    if (/^\s*artifacts:\s*$/.test(line)) {
      inArtifacts = true;
      continue;
    }
    if (!inArtifacts) continue;
    if (/^\S/.test(line)) break; // the next top-level key ends build:
    const image = /^\s*- image:\s*(\S+)\s*$/.exec(line);
    if (image) {
      artifacts.push({ image: image[1]! });
      continue;
    }
    const current = artifacts[artifacts.length - 1];
    const context = /^\s+context:\s*(\S+)\s*$/.exec(line);
    if (current && context) current.context = context[1]!;
    const dockerfile = /^\s+dockerfile:\s*(\S+)\s*$/.exec(line);
    if (current && dockerfile) current.dockerfile = dockerfile[1]!;
    const service = /^\s+SERVICE:\s*(\S+)\s*$/.exec(line);
    if (current && service) current.service = service[1]!;
  }

  const setValueTemplates = lines
    .map((l) =>
      /^\s*services\.([^.\s]+)\.image\.(repository|tag):\s*(["'])\{\{\s*\.IMAGE_(REPO|TAG)_(\w+)\s*\}\}\3\s*$/.exec(l),
    )
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ service: m[1]!, field: m[2]!, kind: m[4]!, artifact: m[5]! }));

  it('starts with the v4beta11 Config header', () => {
    expect(lines).toContain('apiVersion: skaffold/v4beta11');
    expect(lines).toContain('kind: Config');
  });

  it('has one artifact per service and none other (no drift either way)', () => {
    expect(sorted(artifacts.map((a) => a.image))).toEqual(sorted(SERVICE_NAMES.map((s) => `cairn-${s}`)));
  });

  it.each([...SERVICE_NAMES])(
    'builds cairn-%s from the Dockerfile (its SERVICE build argument) and sets its image in the chart',
    (service) => {
      const artifact = artifacts.find((a) => a.image === `cairn-${service}`);
      expect(artifact).toEqual({ image: `cairn-${service}`, context: '.', dockerfile: 'Dockerfile', service });
      const mine = setValueTemplates.filter((s) => s.service === service);
      expect(mine).toEqual(
        expect.arrayContaining([
          { service, field: 'repository', kind: 'REPO', artifact: `cairn_${service}` },
          { service, field: 'tag', kind: 'TAG', artifact: `cairn_${service}` },
        ]),
      );
      expect(mine).toHaveLength(2);
    },
  );

  it('sets image values only for services of the fleet, and deploys charts/cairn with the gateway forwarded', () => {
    expect(sorted(new Set(setValueTemplates.map((s) => s.service)))).toEqual(sorted(SERVICE_NAMES));
    expect(lines.some((l) => /^\s+chartPath:\s*charts\/cairn\s*$/.test(l))).toBe(true);
    const forward = lines.slice(lines.findIndex((l) => /^portForward:/.test(l)));
    expect(forward.join('\n')).toMatch(/resourceName: cairn-gateway\s*\n\s*port: 8080\b/);
  });
});
