/**
 * The deployment files (the root Dockerfile, charts/cairn, skaffold.yaml) against the fleet of
 * packages/config/src/fleet.ts and against Kubernetes itself: the chart is rendered by real helm (the pinned binary
 * of tools/dev/helm.mjs) with its default values, with values-production.example.yaml (keys in existing Secrets),
 * with the keys given in values and with existingSecret, and every rendered object is validated against the
 * Kubernetes schemas with unknown fields as errors (test/support/kubernetes.ts). No API server can run on these
 * machines: server-side dry runs and admission are out of reach, so this is the check.
 */
import { beforeAll, describe, it, expect } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
// '@cairn/config' is not a dependency of the workspace root, so import its source directly.
import {
  commonEnvShape,
  DEFAULT_GATEWAY_HTTP_PORT,
  DEFAULT_PORTS,
  grpcAddrVar,
  identityProblems,
  loadConfig,
  SERVICE_NAMES,
  SERVICE_NODE_FLAGS,
  type ServiceName,
} from '../packages/config/src/index.js';
import { serviceTlsName } from '../packages/rpc/src/tls.js';
import { gatewayConfigShape } from '../services/gateway/src/config.js';
import { helm, installHelm, render, template } from './support/helm.js';
import { unknownFields, validateObject, type KubeObject } from './support/kubernetes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (rel: string): string => readFileSync(join(ROOT, rel), 'utf8');
const sorted = (xs: Iterable<string>): string[] => [...xs].sort();
const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

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
    // `node`, the service processes' V8 flags (as `npm run up` passes them), the bundle.
    const argv = JSON.parse(cmds[cmds.length - 1]!.replace(/^CMD\s+/i, '')) as string[];
    expect(argv).toEqual(['node', ...SERVICE_NODE_FLAGS, 'dist/main.js']);
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

// ---------------------------------------------------------------------------------------------------
// Rendered objects

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    resourceFieldRef?: { containerName?: string; resource: string; divisor?: string };
  };
}
interface Container {
  name: string;
  image: string;
  env?: EnvVar[];
  envFrom?: Array<{ configMapRef?: { name: string } }>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
interface PodSpec {
  containers: Container[];
  volumes?: Array<{ name: string; emptyDir?: { sizeLimit?: string }; secret?: { secretName: string } }>;
  topologySpreadConstraints?: Array<{
    topologyKey: string;
    maxSkew: number;
    whenUnsatisfiable: string;
    labelSelector: { matchLabels: Record<string, string> };
  }>;
}
interface Deployment extends KubeObject {
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    strategy: { rollingUpdate: { maxSurge: number; maxUnavailable: number } };
    template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: PodSpec };
  };
}
interface Service extends KubeObject {
  spec: {
    clusterIP?: string;
    publishNotReadyAddresses?: boolean;
    selector: Record<string, string>;
    ports: Array<{ name: string; port: number }>;
  };
}

const ofKind = <T extends KubeObject>(objects: KubeObject[], kind: string): T[] =>
  objects.filter((o) => o.kind === kind) as T[];
function named<T extends KubeObject>(objects: KubeObject[], kind: string, name: string): T {
  const found = ofKind<T>(objects, kind).find((o) => o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} rendered`);
  return found;
}
const deploymentOf = (objects: KubeObject[], service: string): Deployment =>
  named<Deployment>(objects, 'Deployment', `cairn-${service}`);
const containerOf = (objects: KubeObject[], service: string): Container =>
  deploymentOf(objects, service).spec.template.spec.containers[0]!;
const envOf = (objects: KubeObject[], service: string): Map<string, EnvVar> =>
  new Map((containerOf(objects, service).env ?? []).map((e) => [e.name, e]));
function configMapData(objects: KubeObject[]): Record<string, string> {
  return named<KubeObject & { data: Record<string, string> }>(objects, 'ConfigMap', 'cairn-env').data;
}
function secretData(objects: KubeObject[], name: string): Record<string, string> {
  const secret = named<KubeObject & { data: Record<string, string> }>(objects, 'Secret', name);
  return Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
}

/** Kubernetes quantities in base units (bytes, cores). */
function quantity(text: string | number): number {
  const m = /^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(String(text));
  if (!m) throw new Error(`not a quantity: ${text}`);
  const scale: Record<string, number> = {
    m: 1e-3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
  };
  return Number(m[1]) * (m[2] ? scale[m[2]]! : 1);
}

const PRODUCTION_FILE = 'charts/cairn/values-production.example.yaml';

/** Every key production needs, given in values (random each run), with the example file's existing Secrets off. */
function productionKeys(): Record<string, string> {
  const keys: Record<string, string> = {
    dataKey: hex(32),
    signerKek: hex(32),
    webhookSecretKey: hex(32),
    watermarkKeys: `k2:${hex(32)},k1:${hex(32)}`,
    paymentProcessorSecretKey: `sk_live_${hex(12)}`,
    anchorPrivateKey: `0x${hex(32)}`,
  };
  for (const service of SERVICE_NAMES) keys[`nats.passwords.${service}`] = `p${hex(16)}`;
  return keys;
}
const setStrings = (values: Record<string, string>): string[] =>
  Object.entries(values).flatMap(([k, v]) => ['--set-string', `${k}=${v.replace(/,/g, '\\,')}`]); // helm splits --set on commas
const KEYS_IN_VALUES = [
  '-f',
  PRODUCTION_FILE,
  '--set-string',
  'existingSecret=',
  '--set-string',
  'nats.existingSecret=',
];

const values = parseYaml(read('charts/cairn/values.yaml')) as {
  services: Record<string, { ports: Record<string, number>; image: { repository: string; tag: string } }>;
  database: { urls: Record<string, string> };
  postgres: { maxConnections: number; reservedConnections: number };
  nats: { url: string };
};
const productionValues = parseYaml(read(PRODUCTION_FILE)) as {
  postgres: { maxConnections: number; reservedConnections: number };
};

let helmVersion = '';
const renders: Record<'default' | 'production' | 'keysInValues' | 'existingSecret', KubeObject[]> = {
  default: [],
  production: [],
  keysInValues: [],
  existingSecret: [],
};
let givenKeys: Record<string, string> = {};

beforeAll(() => {
  helmVersion = installHelm();
  givenKeys = productionKeys();
  renders.default = render([]);
  renders.production = render(['-f', PRODUCTION_FILE]);
  renders.keysInValues = render([...KEYS_IN_VALUES, ...setStrings(givenKeys)]);
  renders.existingSecret = render(['--set', 'existingSecret=ops-cairn', '--set', 'nats.existingSecret=ops-cairn-nats']);
}, 120_000);

const RENDERS = ['default', 'production', 'keysInValues', 'existingSecret'] as const;

describe('strict validation of Kubernetes objects (test/support/kubernetes.ts)', () => {
  const deployment = (): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x' },
    spec: {
      selector: { matchLabels: { a: 'b' } },
      template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'x', image: 'x:1' }] } },
    },
  });

  it('passes a valid Deployment', () => {
    expect(validateObject(deployment())).toEqual([]);
  });

  it('reports an unknown field at any depth, a wrong type, a missing required field and an unknown kind', () => {
    const unknown = deployment();
    (unknown.spec as { template: { spec: { volumes: unknown[] } } }).template.spec.volumes = [
      { name: 'tmp', emptyDir: { sizeLimt: '1Gi' } },
    ];
    expect(validateObject(unknown)).toEqual([
      'Deployment/x.spec.template.spec.volumes[0].emptyDir.sizeLimt: unknown field of V1EmptyDirVolumeSource',
    ]);
    const wrongType = deployment();
    (wrongType.spec as { replicas: unknown }).replicas = 'two';
    expect(validateObject(wrongType).join('\n')).toMatch(/replicas must be integer/);
    const missing = deployment();
    delete (missing.spec as { selector?: unknown }).selector;
    expect(validateObject(missing).join('\n')).toMatch(/must have required property '?selector'?/);
    expect(validateObject({ apiVersion: 'v1', kind: 'Nonsense', metadata: { name: 'x' } })).toEqual([
      'Nonsense/x: v1 Nonsense is not a kind this chart may render',
    ]);
    expect(unknownFields({ metadata: { labelz: {} } }, 'V1Service', 'S')).toEqual([
      'S.metadata.labelz: unknown field of V1ObjectMeta',
    ]);
  });
});

describe('Helm chart: rendered by real helm and validated strictly', () => {
  it('helm is the pinned v4 binary', () => {
    expect(helmVersion).toMatch(/^v4\.1\.4\b/);
  });

  it.each(RENDERS)('%s render: every object is a valid Kubernetes object, no unknown field', (which) => {
    const objects = renders[which];
    expect(objects.length).toBeGreaterThan(40);
    expect(objects.flatMap(validateObject)).toEqual([]);
    const ids = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(ids.length).toBe(new Set(ids).size);
  });

  it.each(RENDERS)('%s render: per service a Deployment, a Service, a headless Service and a PDB', (which) => {
    const objects = renders[which];
    const names = (kind: string) => sorted(ofKind(objects, kind).map((o) => o.metadata.name));
    expect(names('Deployment')).toEqual(sorted(SERVICE_NAMES.map((s) => `cairn-${s}`)));
    expect(names('PodDisruptionBudget')).toEqual(sorted(SERVICE_NAMES.map((s) => `cairn-${s}`)));
    expect(names('Service')).toEqual(sorted(SERVICE_NAMES.flatMap((s) => [`cairn-${s}`, `cairn-${s}-headless`])));
  });

  it('with existingSecret (and nats.existingSecret) the chart makes no Secret and every pod reads the named ones', () => {
    for (const which of ['existingSecret', 'production'] as const) {
      const objects = renders[which];
      expect(ofKind(objects, 'Secret')).toEqual([]);
      const [main, nats] =
        which === 'production' ? ['cairn-secrets', 'cairn-nats-auth'] : ['ops-cairn', 'ops-cairn-nats'];
      for (const service of SERVICE_NAMES)
        for (const env of envOf(objects, service).values()) {
          const ref = env.valueFrom?.secretKeyRef;
          if (ref)
            expect({ env: env.name, secret: ref.name }).toEqual({
              env: env.name,
              secret: env.name === 'NATS_PASSWORD' ? nats : main,
            });
        }
    }
  });

  it('helm lint --strict passes on the default and the production values', () => {
    for (const args of [[], ['-f', PRODUCTION_FILE], [...KEYS_IN_VALUES, ...setStrings(givenKeys)]]) {
      const lint = helm(['lint', '--strict', join(ROOT, 'charts/cairn'), ...args]);
      expect({ args, status: lint.status, out: lint.stdout }).toEqual({
        args,
        status: 0,
        out: expect.stringContaining('1 chart(s) linted, 0 chart(s) failed'),
      });
      expect(lint.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });

  it('values.schema.json refuses a value of the wrong type, an unknown mode and an unknown key', () => {
    const refused = (args: string[], message: RegExp) => {
      const run = template(args);
      expect({ args, status: run.status, stderr: run.stderr }).toEqual({
        args,
        status: 1,
        stderr: expect.stringMatching(message),
      });
    };
    refused(['--set', 'services.gateway.replicas=two'], /\/services\/gateway\/replicas': got string, want integer/);
    refused(['--set', 'mode=staging'], /\/mode': value must be one of 'development', 'production'/);
    refused(['--set', 'replicaCount=3'], /additional properties 'replicaCount' not allowed/);
    refused(['--set-string', 'dataKey=not-hex'], /\/dataKey'/);
    refused(['--set', 'services.gateway.ports.grpc=70000'], /\/services\/gateway\/ports\/grpc'/);
    const schema = JSON.parse(read('charts/cairn/values.schema.json')) as {
      properties: { services: { properties: Record<string, unknown> } };
    };
    expect(sorted(Object.keys(schema.properties.services.properties))).toEqual(sorted(SERVICE_NAMES));
  });
});

describe('Helm chart: keys are never generated blind', () => {
  const keyNames = ['CAIRN_DATA_KEY', 'SIGNER_KEK', 'WEBHOOK_SECRET_KEY', 'WATERMARK_KEYS'];

  it('the templates call no random or clock function: a render cannot make a key up', () => {
    const dir = join(ROOT, 'charts/cairn/templates');
    const impure =
      /\b(randAlphaNum|randAlpha|randNumeric|randAscii|randBytes|randInt|shuffle|uuidv4|genPrivateKey|genCA\w*|genSelfSignedCert\w*|genSignedCert\w*|htpasswd|now|unixEpoch|date\w*)\b/;
    for (const file of readdirSync(dir)) {
      const actions = (read(`charts/cairn/templates/${file}`).match(/\{\{[\s\S]*?\}\}/g) ?? [])
        .filter((action) => !/^\{\{-?\s*\/\*/.test(action))
        .map((action) => action.replace(/"(?:[^"\\]|\\.)*"|`[^`]*`/g, '""'));
      expect({ file, calls: actions.filter((a) => impure.test(a)) }).toEqual({ file, calls: [] });
    }
    // The check sees a call where there is one.
    expect(impure.test('{{ randAlphaNum 64 | sha256sum }}')).toBe(true);
  });

  it('development: two renders without lookup give the same keys and passwords, shaped as the services read them', () => {
    const again = render([]);
    for (const secret of ['cairn-secrets', 'cairn-nats-auth'])
      expect(secretData(again, secret)).toEqual(secretData(renders.default, secret));
    const keys = secretData(renders.default, 'cairn-secrets');
    for (const name of ['CAIRN_DATA_KEY', 'SIGNER_KEK', 'WEBHOOK_SECRET_KEY'])
      expect(keys[name]).toMatch(/^[0-9a-f]{64}$/);
    expect(keys.WATERMARK_KEYS).toMatch(/^dev:[0-9a-f]{64}$/);
    expect(new Set(keyNames.map((k) => keys[k]!.replace(/^dev:/, ''))).size).toBe(keyNames.length);
    for (const password of Object.values(secretData(renders.default, 'cairn-nats-auth')))
      expect(password).toMatch(/^[A-Za-z][A-Za-z0-9]{11,}$/);
    // Labelled as what they are.
    for (const secret of ['cairn-secrets', 'cairn-nats-auth'])
      expect(named(renders.default, 'Secret', secret).metadata.annotations).toMatchObject({
        'helm.sh/resource-policy': 'keep',
        'cairn.dev/keys': 'development-only',
      });
  });

  it('development: the derived keys belong to the release (namespace, name, keySeed); a given key is used as given', () => {
    const base = secretData(renders.default, 'cairn-secrets');
    const otherRelease = secretData(render([], 'other'), 'cairn-secrets');
    const otherNamespace = secretData(render([], 'cairn', 'other'), 'cairn-secrets');
    const seeded = secretData(render(['--set-string', 'development.keySeed=s3cret']), 'cairn-secrets');
    for (const name of keyNames) {
      expect(otherRelease[name]).not.toBe(base[name]);
      expect(otherNamespace[name]).not.toBe(base[name]);
      expect(seeded[name]).not.toBe(base[name]);
    }
    const dataKey = hex(32);
    expect(secretData(render(['--set-string', `dataKey=${dataKey}`]), 'cairn-secrets').CAIRN_DATA_KEY).toBe(dataKey);
  });

  it('production: the Secrets hold exactly the keys given, unlabelled as development, and are kept on uninstall', () => {
    const keys = secretData(renders.keysInValues, 'cairn-secrets');
    expect(keys).toMatchObject({
      CAIRN_DATA_KEY: givenKeys.dataKey,
      SIGNER_KEK: givenKeys.signerKek,
      WEBHOOK_SECRET_KEY: givenKeys.webhookSecretKey,
      WATERMARK_KEYS: givenKeys.watermarkKeys,
      PAYMENT_PROCESSOR_SECRET_KEY: givenKeys.paymentProcessorSecretKey,
      ANCHOR_PRIVATE_KEY: givenKeys.anchorPrivateKey,
    });
    const passwords = secretData(renders.keysInValues, 'cairn-nats-auth');
    for (const service of SERVICE_NAMES)
      expect(passwords[`CAIRN_NATS_PASSWORD_${service.toUpperCase()}`]).toBe(givenKeys[`nats.passwords.${service}`]);
    for (const secret of ['cairn-secrets', 'cairn-nats-auth']) {
      const annotations = named(renders.keysInValues, 'Secret', secret).metadata.annotations ?? {};
      expect(annotations['helm.sh/resource-policy']).toBe('keep');
      expect(annotations['cairn.dev/keys']).toBeUndefined();
    }
  });

  const required: Array<[string, RegExp]> = [
    ['dataKey', /mode: production requires dataKey \(CAIRN_DATA_KEY\): set it, or existingSecret/],
    ['signerKek', /mode: production requires signerKek \(SIGNER_KEK\)/],
    ['webhookSecretKey', /mode: production requires webhookSecretKey \(WEBHOOK_SECRET_KEY\)/],
    ['watermarkKeys', /mode: production requires watermarkKeys \(WATERMARK_KEYS\)/],
    [
      'nats.passwords.webhook',
      /mode: production requires nats\.passwords\.webhook \(CAIRN_NATS_PASSWORD_WEBHOOK\): set it, or nats\.existingSecret/,
    ],
    [
      'paymentProcessorSecretKey',
      /mode: production requires paymentProcessorSecretKey \(PAYMENT_PROCESSOR_SECRET_KEY\)/,
    ],
    ['anchorPrivateKey', /mode: production requires anchorPrivateKey \(ANCHOR_PRIVATE_KEY/],
  ];

  it.each(required)('production without %s (and no existingSecret) fails to render, naming it', (value, message) => {
    const keys = { ...givenKeys };
    delete keys[value];
    const run = template([...KEYS_IN_VALUES, ...setStrings(keys)]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
  });

  it('production with no key at all fails, and a development render of the same values succeeds', () => {
    expect(template(KEYS_IN_VALUES).stderr).toMatch(/mode: production requires/);
    expect(
      template([...KEYS_IN_VALUES, '--set', 'mode=development', '--set-string', 'publicBaseUrl=http://localhost:8080'])
        .status,
    ).toBe(0);
  });

  it('the pod templates carry checksums of the ConfigMap, the Secret and the NATS Secret: a change rolls exactly the pods it concerns', () => {
    const checksums = (objects: KubeObject[]) =>
      Object.fromEntries(
        ofKind<Deployment>(objects, 'Deployment').map((d) => {
          const a = d.spec.template.metadata.annotations;
          return [d.metadata.name, [a['checksum/config'], a['checksum/secret'], a['checksum/nats-auth']]];
        }),
      );
    const base = checksums(renders.default);
    for (const sums of Object.values(base)) for (const sum of sums) expect(sum).toMatch(/^[0-9a-f]{64}$/);
    expect(checksums(render([]))).toEqual(base);
    const changed = (args: string[]) => {
      const after = checksums(render(args));
      return Object.keys(base).map((name) => after[name]!.map((sum, i) => sum !== base[name]![i]));
    };
    const everywhere = (flags: boolean[]) => SERVICE_NAMES.map(() => flags);
    expect(changed(['--set', 'global.env.LOG_LEVEL=debug'])).toEqual(everywhere([true, false, false]));
    expect(changed(['--set-string', `signerKek=${hex(32)}`])).toEqual(everywhere([false, true, false]));
    expect(changed(['--set-string', `nats.passwords.audit=p${hex(16)}`])).toEqual(everywhere([false, false, true]));
  });
});

describe('Helm chart: production mode refuses unsafe values', () => {
  const refusedUrls = [
    'http://cairn.example.com',
    'https://localhost:8080',
    'https://127.0.0.1',
    'https://[::1]:8443',
    'https://10.1.2.3',
    'https://192.168.1.10',
    'https://169.254.169.254',
    'https://cairn',
    'https://cairn-gateway.cairn.svc',
    'https://cairn-signer.cairn.svc.cluster.local',
    'https://printer.local',
    'https://api.corp.internal',
  ];
  const cases = ['publicBaseUrl', 'ocspPublicUrl'].flatMap((value) => refusedUrls.map((url) => [value, url] as const));

  it.each(cases)('%s %s fails the render', (value, url) => {
    const run = template(['-f', PRODUCTION_FILE, '--set-string', `${value}=${url}`]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`mode: production: ${value} "${url}"`);
  });

  it('public https names pass, and development takes the default loopback URLs', () => {
    expect(
      template(['-f', PRODUCTION_FILE, '--set-string', 'publicBaseUrl=https://provenance.news-org.example:8443'])
        .status,
    ).toBe(0);
    expect(configMapData(renders.default).CAIRN_ENV).toBe('development');
    expect(envOf(renders.default, 'gateway').get('PUBLIC_BASE_URL')?.value).toBe('http://localhost:8080');
  });

  it("the signer's time-stamping authority: its public URL and an external TSA reach the signer only when set", () => {
    const signerEnv = envOf(renders.production, 'signer');
    expect([signerEnv.get('TSA_PUBLIC_URL'), signerEnv.get('TSA_URL')]).toEqual([undefined, undefined]);
    const objects = render([
      '-f',
      PRODUCTION_FILE,
      '--set-string',
      'tsaPublicUrl=https://ocsp.cairn.example.com/tsa',
      '--set-string',
      'tsaUrl=https://tsa.example.org/rfc3161',
    ]);
    const env = envOf(objects, 'signer');
    expect([env.get('TSA_PUBLIC_URL')?.value, env.get('TSA_URL')?.value]).toEqual([
      'https://ocsp.cairn.example.com/tsa',
      'https://tsa.example.org/rfc3161',
    ]);
    expect(envOf(objects, 'gateway').has('TSA_URL')).toBe(false);
    expect(template(['--set-string', 'tsaUrl=ftp://tsa.example.org']).status).toBe(1);
  });

  it('the filesystem audit export sink, a file:// blob store, an unset chain URL and CAIRN_ENV in global.env fail the render', () => {
    const refused = (args: string[], message: string) => {
      const run = template(['-f', PRODUCTION_FILE, ...args]);
      expect({ args, status: run.status, refused: run.stderr.includes(message) }).toEqual({
        args,
        status: 1,
        refused: true,
      });
    };
    refused(
      ['--set-string', 'services.audit.env.AUDIT_EXPORT_DIR=/data/audit'],
      'mode: production refuses AUDIT_EXPORT_DIR',
    );
    refused(['--set-string', 'global.env.AUDIT_EXPORT_DIR=/data/audit'], 'mode: production refuses AUDIT_EXPORT_DIR');
    refused(['--set-string', 'global.env.BLOB_STORE_URL=file:///tmp/blobs'], 'mode: production refuses BLOB_STORE_URL');
    refused(['--set-string', 'anchorRpcUrl='], 'mode: production requires anchorRpcUrl');
    refused(['--set-string', 'global.env.CAIRN_ENV=production'], 'global.env.CAIRN_ENV: set `mode');
    // Development keeps the filesystem sink available (the local fleet's default).
    expect(template(['--set-string', 'services.audit.env.AUDIT_EXPORT_DIR=/tmp/audit']).status).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------
// What production mode requires of each service, against what the rendered chart gives each container.

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
function requiredInProduction(service: ServiceName, grpcHost: string): string[] {
  const common = identityProblems({
    ...loadConfig(commonEnvShape, {}),
    CAIRN_ENV: 'production',
    GRPC_HOST: grpcHost,
    NATS_URL: values.nats.url,
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

/** Every variable a container gets: its env and the ConfigMap it reads whole. */
function providedEnv(objects: KubeObject[], service: ServiceName): Set<string> {
  const container = containerOf(objects, service);
  expect(container.envFrom).toEqual([{ configMapRef: { name: 'cairn-env' } }]);
  return new Set([...Object.keys(configMapData(objects)), ...envOf(objects, service).keys()]);
}

describe('Helm chart: production mode has what it requires', () => {
  it("the requirements are read from the code: the identity checks and each service's own refusals", () => {
    // Not a list kept here: if a check is renamed away, this notices before the per-service tests pass vacuously.
    expect(requiredInProduction('gateway', '0.0.0.0')).toEqual(
      expect.arrayContaining([
        'GRPC_TLS_CA',
        'GRPC_TLS_CERT',
        'GRPC_TLS_KEY',
        'NATS_USER',
        'NATS_PASSWORD',
        'CAIRN_DATA_KEY',
      ]),
    );
    expect(SERVICE_NAMES.flatMap((s) => requiredInProduction(s, '0.0.0.0')).length).toBeGreaterThan(
      SERVICE_NAMES.length * 8,
    );
  });

  it.each([...SERVICE_NAMES])('%s: every variable production requires is in the production render', (service) => {
    for (const which of ['production', 'keysInValues'] as const) {
      const objects = renders[which];
      const grpcHost = envOf(objects, service).get('GRPC_HOST')?.value ?? '127.0.0.1';
      expect(grpcHost).toBe('0.0.0.0');
      const provided = providedEnv(objects, service);
      expect({ which, missing: requiredInProduction(service, grpcHost).filter((name) => !provided.has(name)) }).toEqual(
        {
          which,
          missing: [],
        },
      );
      expect(configMapData(objects).CAIRN_ENV).toBe('production');
    }
  });

  it.each([...SERVICE_NAMES])(
    "%s: each secret it reads is a key of a rendered Secret, none optional in production, its database URL its own role's",
    (service) => {
      for (const which of ['keysInValues', 'default'] as const) {
        const objects = renders[which];
        for (const env of envOf(objects, service).values()) {
          const ref = env.valueFrom?.secretKeyRef;
          if (!ref) continue;
          const held = Object.keys(secretData(objects, ref.name)).includes(ref.key);
          // Development leaves the payment and anchor keys out when not given: those references are optional.
          expect({ which, env: env.name, held: held || (which === 'default' && ref.optional === true) }).toEqual({
            which,
            env: env.name,
            held: true,
          });
          if (which === 'keysInValues') expect(ref.optional).toBeUndefined();
        }
        const database = envOf(objects, service).get('DATABASE_URL')!.valueFrom!.secretKeyRef!;
        expect(database.key).toBe(`DATABASE_URL_${service.toUpperCase()}`);
        expect(new URL(secretData(objects, database.name)[database.key]!).username).toBe(`cairn_${service}`);
      }
    },
  );

  it('TRUST_PROXY is set for the gateway (the ingress), and gRPC binds 0.0.0.0 only with the TLS files from the Secret', () => {
    const objects = renders.production;
    expect(envOf(objects, 'gateway').get('TRUST_PROXY')?.value).toBe('uniquelocal');
    for (const service of SERVICE_NAMES) {
      const env = envOf(objects, service);
      expect(env.get('GRPC_HOST')?.value).toBe('0.0.0.0');
      for (const name of ['GRPC_TLS_CA', 'GRPC_TLS_CERT', 'GRPC_TLS_KEY'])
        expect(env.get(name)?.value).toMatch(/^\/etc\/cairn\/tls\//);
      expect(env.get('NATS_USER')?.value).toBe(`cairn-${service}`);
      const tls = deploymentOf(objects, service).spec.template.spec.volumes!.find((v) => v.name === 'grpc-tls');
      expect(tls?.secret?.secretName).toBe('cairn-grpc-tls');
    }
  });

  it("the NetworkPolicy denies ingress to the chart's pods but gRPC among them, the ops port, the gateway's HTTP and the signer's OCSP", () => {
    type Policy = KubeObject & {
      spec: {
        podSelector: { matchLabels?: Record<string, string> };
        ingress: Array<{ from?: unknown[]; ports?: Array<{ port: string }> }>;
      };
    };
    const policies = ofKind<Policy>(renders.default, 'NetworkPolicy');
    expect(named<Policy>(renders.default, 'NetworkPolicy', 'cairn-default-deny-ingress').spec.ingress).toEqual([]);
    const grpc = named<Policy>(renders.default, 'NetworkPolicy', 'cairn-grpc-and-ops').spec.ingress;
    expect(grpc[0]).toEqual({
      from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/part-of': 'cairn' } } }],
      ports: [{ port: 'grpc', protocol: 'TCP' }],
    });
    // Open from anywhere (no `from:`): exactly the gateway's http and the signer's ocsp.
    const open = policies
      .filter((p) => p.spec.ingress.some((rule) => rule.from === undefined))
      .map((p) => [
        p.spec.podSelector.matchLabels?.['app.kubernetes.io/component'],
        p.spec.ingress[0]!.ports![0]!.port,
      ]);
    expect(open).toEqual([
      ['gateway', 'http'],
      ['signer', 'ocsp'],
    ]);
  });

  it("ships the NATS authorization file the services' users and permissions come from", () => {
    const conf = named<KubeObject & { data: Record<string, string> }>(
      renders.default,
      'ConfigMap',
      'cairn-nats-authorization',
    ).data['nats-authorization.conf']!;
    expect(conf.trim()).toBe(read('charts/cairn/files/nats-authorization.conf').trim());
    for (const service of SERVICE_NAMES) expect(conf).toContain(`user: "cairn-${service}"`);
  });
});

describe('Helm chart: a fleet that scales out', () => {
  it.each(RENDERS)('%s render: every service runs >= 2 replicas, spread over nodes and zones, under a PDB', (which) => {
    const objects = renders[which];
    for (const service of SERVICE_NAMES) {
      const deployment = deploymentOf(objects, service);
      const labels = deployment.spec.template.metadata.labels;
      expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
      expect(deployment.spec.selector.matchLabels).toEqual(
        expect.objectContaining({ 'app.kubernetes.io/component': service }),
      );
      const spread = deployment.spec.template.spec.topologySpreadConstraints ?? [];
      expect(sorted(spread.map((c) => c.topologyKey))).toEqual([
        'kubernetes.io/hostname',
        'topology.kubernetes.io/zone',
      ]);
      for (const constraint of spread) {
        expect(constraint.maxSkew).toBe(1);
        expect(labels).toMatchObject(constraint.labelSelector.matchLabels);
      }
      const pdb = named<
        KubeObject & {
          spec: { maxUnavailable?: number; minAvailable?: number; selector: { matchLabels: Record<string, string> } };
        }
      >(objects, 'PodDisruptionBudget', `cairn-${service}`);
      expect(pdb.spec.maxUnavailable).toBe(1);
      expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
      expect(labels).toMatchObject(pdb.spec.selector.matchLabels);
    }
  });

  it('every peer address is the headless Service of every ready pod, in the release namespace; the TLS name stays the ClusterIP Service name', () => {
    const objects = render([], 'cairn', 'media-team');
    for (const peer of SERVICE_NAMES) {
      const headless = named<Service>(objects, 'Service', `cairn-${peer}-headless`);
      expect(headless.spec.clusterIP).toBe('None');
      expect(headless.spec.publishNotReadyAddresses).toBe(false);
      expect(headless.spec.ports).toEqual([
        expect.objectContaining({ name: 'grpc', port: DEFAULT_PORTS[peer].grpc, targetPort: 'grpc' }),
      ]);
      expect(deploymentOf(objects, peer).spec.template.metadata.labels).toMatchObject(headless.spec.selector);
      // Clients check the certificate name serviceTlsName(peer) whatever they dial: the Service of that name exists.
      expect(named<Service>(objects, 'Service', serviceTlsName(peer)).spec.selector).toEqual(headless.spec.selector);
      const address = `dns:///cairn-${peer}-headless.media-team.svc.cluster.local:${DEFAULT_PORTS[peer].grpc}`;
      for (const caller of SERVICE_NAMES) expect(envOf(objects, caller).get(grpcAddrVar(peer))?.value).toBe(address);
    }
    expect(read('charts/cairn/values.yaml')).toMatch(/check the name cairn-<service> \(packages\/rpc serviceTlsName\)/);
  });

  it('connection age, JetStream replicas and size limits are in the shared environment (3 stream replicas in the production example)', () => {
    for (const which of RENDERS) {
      const env = configMapData(renders[which]);
      expect(Number(env.GRPC_MAX_CONNECTION_AGE_MS)).toBeGreaterThan(0);
      expect(Number(env.GRPC_MAX_CONNECTION_AGE_GRACE_MS)).toBeGreaterThan(0);
      expect(Number(env.NATS_STREAM_MAX_BYTES)).toBeGreaterThan(0);
      expect(Number(env.NATS_STREAM_REPLICAS)).toBe(which === 'production' || which === 'keysInValues' ? 3 : 1);
    }
  });

  /** Postgres connections the fleet can hold: per Deployment (replicas + surge pods) x its DATABASE_POOL_MAX. */
  function connectionBudget(objects: KubeObject[]): number {
    return ofKind<Deployment>(objects, 'Deployment').reduce((sum, d) => {
      const pool = Number(envOf(objects, d.metadata.name.replace(/^cairn-/, '')).get('DATABASE_POOL_MAX')?.value);
      expect(pool).toBeGreaterThanOrEqual(1);
      expect(configMapData(objects).DATABASE_POOL_MAX).toBeUndefined();
      return sum + (d.spec.replicas + d.spec.strategy.rollingUpdate.maxSurge) * pool;
    }, 0);
  }

  it('the connection budget fits Postgres max_connections less the reserved ones, as values.yaml documents it', () => {
    const budget = connectionBudget(renders.default);
    expect(budget).toBeLessThanOrEqual(values.postgres.maxConnections - values.postgres.reservedConnections);
    expect(values.postgres.maxConnections).toBe(100); // Postgres's default max_connections
    expect(read('charts/cairn/values.yaml')).toContain(`= ${budget}, within Postgres's default max_connections = 100`);
    const production = connectionBudget(renders.production);
    expect(production).toBeLessThanOrEqual(
      productionValues.postgres.maxConnections - productionValues.postgres.reservedConnections,
    );
    expect(read(PRODUCTION_FILE)).toContain(`= ${production} connections`);
    // Scaling out past the budget is refused in production, with the figure.
    const run = template(['-f', PRODUCTION_FILE, '--set', 'services.verifier.replicas=60']);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/the fleet may open \d+ Postgres connections/);
  });

  it("WATERMARK_WORKERS follows the watermark container's CPU limit, and only where one is set", () => {
    const watermark = containerOf(renders.default, 'watermark');
    expect(quantity(watermark.resources!.limits!.cpu!)).toBeGreaterThanOrEqual(1);
    expect(envOf(renders.default, 'watermark').get('WATERMARK_WORKERS')?.valueFrom?.resourceFieldRef).toEqual({
      containerName: 'watermark',
      resource: 'limits.cpu',
      divisor: '1',
    });
    for (const service of SERVICE_NAMES.filter((s) => s !== 'watermark'))
      expect(envOf(renders.default, service).has('WATERMARK_WORKERS')).toBe(false);
    const unlimited = render(['--set', 'services.watermark.resources.limits.cpu=null']);
    expect(containerOf(unlimited, 'watermark').resources!.limits!.cpu).toBeUndefined();
    expect(envOf(unlimited, 'watermark').has('WATERMARK_WORKERS')).toBe(false);
  });

  it('every pod has a bounded /tmp and ephemeral-storage requests and limits that hold it', () => {
    for (const service of SERVICE_NAMES) {
      const deployment = deploymentOf(renders.default, service);
      const container = containerOf(renders.default, service);
      expect(container.volumeMounts).toEqual(expect.arrayContaining([{ name: 'tmp', mountPath: '/tmp' }]));
      const tmp = deployment.spec.template.spec.volumes!.find((v) => v.name === 'tmp')!;
      const sizeLimit = quantity(tmp.emptyDir!.sizeLimit!);
      expect(sizeLimit).toBeGreaterThan(0);
      const request = quantity(container.resources!.requests!['ephemeral-storage']!);
      const limit = quantity(container.resources!.limits!['ephemeral-storage']!);
      expect({ service, fits: request > 0 && limit > sizeLimit }).toEqual({ service, fits: true });
    }
  });

  it("the ingress lets the gateway's own upload limit through (body size, timeouts, no request buffering); your annotations win", () => {
    const uploadMax = loadConfig(gatewayConfigShape, {}).UPLOAD_MAX_BYTES;
    const annotations = (args: string[]) =>
      named(render(['--set', 'ingress.enabled=true', ...args]), 'Ingress', 'cairn-gateway').metadata.annotations ?? {};
    const nginx = annotations([]);
    const bodySize = quantity(nginx['nginx.ingress.kubernetes.io/proxy-body-size']!.replace(/m$/, 'Mi'));
    expect(bodySize).toBeGreaterThan(uploadMax);
    expect(bodySize).toBeLessThanOrEqual(uploadMax + 2 * 2 ** 20);
    expect(Number(nginx['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeGreaterThanOrEqual(300);
    expect(Number(nginx['nginx.ingress.kubernetes.io/proxy-send-timeout'])).toBeGreaterThanOrEqual(300);
    expect(nginx['nginx.ingress.kubernetes.io/proxy-request-buffering']).toBe('off');
    const bigger = annotations(['--set-string', `services.gateway.env.UPLOAD_MAX_BYTES=${200 * 2 ** 20}`]);
    expect(bigger['nginx.ingress.kubernetes.io/proxy-body-size']).toBe('201m');
    const own = annotations([
      '--set-string',
      'ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/proxy-read-timeout=900',
    ]);
    expect(own['nginx.ingress.kubernetes.io/proxy-read-timeout']).toBe('900');
    expect(Object.keys(annotations(['--set', 'ingress.nginx.enabled=false']))).toEqual([]);
  });
});

describe('Helm chart: values.yaml and the fleet', () => {
  it('Chart.yaml names the chart and versions', () => {
    expect(parseYaml(read('charts/cairn/Chart.yaml'))).toMatchObject({
      apiVersion: 'v2',
      name: 'cairn',
      version: '0.1.0',
      appVersion: '0.1.0',
    });
  });

  it('values.yaml `services:` has exactly the fleet (no drift either way), with its default ports and images', () => {
    expect(sorted(Object.keys(values.services))).toEqual(sorted(SERVICE_NAMES));
    for (const service of SERVICE_NAMES) {
      const entry = values.services[service]!;
      const ports: Record<string, number> = { grpc: DEFAULT_PORTS[service].grpc, ops: DEFAULT_PORTS[service].ops };
      if (service === 'gateway') ports.http = DEFAULT_GATEWAY_HTTP_PORT;
      if (service === 'signer') ports.ocsp = 9471;
      expect({ service, ports: entry.ports }).toEqual({ service, ports });
      expect(entry.image.repository).toBe(`cairn-${service}`);
      expect(new URL(values.database.urls[service]!).username).toBe(`cairn_${service}`);
    }
  });

  it('the default render is development mode, with the gateway on ClusterIP and no Ingress', () => {
    expect(parseYaml(read('charts/cairn/values.yaml'))).toMatchObject({ mode: 'development' });
    expect(named<Service>(renders.default, 'Service', 'cairn-gateway').spec).toMatchObject({ type: 'ClusterIP' });
    expect(ofKind(renders.default, 'Ingress')).toEqual([]);
    expect(ofKind(renders.production, 'Ingress')).toHaveLength(1);
  });
});

describe('skaffold.yaml', () => {
  interface Artifact {
    image: string;
    context: string;
    docker: { dockerfile: string; buildArgs: Record<string, string> };
  }
  interface HelmRelease {
    name: string;
    chartPath: string;
    setValues?: Record<string, string | number | boolean>;
    setValueTemplates?: Record<string, string>;
  }
  const skaffold = parseYaml(read('skaffold.yaml')) as {
    apiVersion: string;
    kind: string;
    build: { artifacts: Artifact[] };
    profiles: Array<{
      name: string;
      activation?: Array<{ command?: string }>;
      deploy: { helm: { releases: HelmRelease[] } };
    }>;
    portForward: Array<{ resourceType: string; resourceName: string; port: number; localPort: number }>;
  };
  const dev = skaffold.profiles.find((p) => p.name === 'dev')!;
  const release = dev.deploy.helm.releases[0]!;

  it('is a v4beta11 Config with one artifact per service from the Dockerfile (its SERVICE build argument)', () => {
    expect(skaffold).toMatchObject({ apiVersion: 'skaffold/v4beta11', kind: 'Config' });
    expect(sorted(skaffold.build.artifacts.map((a) => a.image))).toEqual(
      sorted(SERVICE_NAMES.map((s) => `cairn-${s}`)),
    );
    for (const service of SERVICE_NAMES)
      expect(skaffold.build.artifacts.find((a) => a.image === `cairn-${service}`)).toEqual({
        image: `cairn-${service}`,
        context: '.',
        docker: { dockerfile: 'Dockerfile', buildArgs: { SERVICE: service } },
      });
  });

  it('the dev profile (active under `skaffold dev`) deploys charts/cairn in development mode with every built image', () => {
    expect(dev.activation).toEqual([{ command: 'dev' }]);
    expect(dev.deploy.helm.releases).toHaveLength(1);
    expect(release).toMatchObject({ name: 'cairn', chartPath: 'charts/cairn', setValues: { mode: 'development' } });
    const expected = Object.fromEntries(
      SERVICE_NAMES.flatMap((s) => [
        [`services.${s}.image.repository`, `{{.IMAGE_REPO_cairn_${s}}}`],
        [`services.${s}.image.tag`, `{{.IMAGE_TAG_cairn_${s}}}`],
      ]),
    );
    expect(release.setValueTemplates).toEqual(expected);
    expect(skaffold.portForward).toEqual([
      { resourceType: 'service', resourceName: 'cairn-gateway', port: 8080, localPort: 8080 },
    ]);
  });

  it('renders with helm as skaffold would set it (the images it built), and every object validates strictly', () => {
    // skaffold fills IMAGE_REPO_<artifact> / IMAGE_TAG_<artifact> from its build; stand-ins of the same shape.
    const fill = (text: string) =>
      text.replace(/\{\{\.IMAGE_(REPO|TAG)_(\w+)\}\}/g, (_, kind: string, artifact: string) =>
        kind === 'REPO' ? `registry.dev.example/${artifact.replace(/_/g, '-')}` : `dev-${artifact.slice(6)}-1a2b3c`,
      );
    const args = [
      ...Object.entries(release.setValues ?? {}).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
      ...Object.entries(release.setValueTemplates ?? {}).flatMap(([k, v]) => ['--set', `${k}=${fill(v)}`]),
    ];
    const objects = render(args, release.name, 'default');
    expect(objects.flatMap(validateObject)).toEqual([]);
    expect(configMapData(objects).CAIRN_ENV).toBe('development');
    for (const service of SERVICE_NAMES)
      expect(containerOf(objects, service).image).toBe(`registry.dev.example/cairn-${service}:dev-${service}-1a2b3c`);
    expect(existsSync(join(ROOT, release.chartPath, 'Chart.yaml'))).toBe(true);
  });
});
