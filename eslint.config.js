// ESLint for the whole tree (`pnpm lint`, run by `npm test`). Two halves:
//  1. code rules: typescript-eslint with type information (floating and misused promises, no `any`, no silent
//     catches);
//  2. the service interior (docs/decisions/0038-service-interior-rooms.md), as `no-restricted-imports` per glob:
//     `domain/` imports nothing that does I/O, `app/` never names `store/` (it uses the ports in app/ports.ts),
//     `rpc.ts` and `http/` never reach `db/` or `store/`, and nothing under services/<a> imports services/<b>.
//     Contracts between services are protos and typed events, never code.
import { readdirSync } from 'node:fs';
import tseslint from 'typescript-eslint';

const SERVICES = readdirSync(new URL('./services/', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

// `.catch(() => undefined)` (or `() => {}`, `() => null`) drops an error without a word. Allowed only with a
// comment saying why: inside the handler, at the end of its line, or on the line above the statement.
const noSilentCatch = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      silent: 'This .catch drops the error silently: handle it, or add a comment saying why it can be dropped.',
    },
  },
  create(context) {
    const source = context.sourceCode;
    const swallows = (fn) =>
      (fn.type === 'ArrowFunctionExpression' || fn.type === 'FunctionExpression') &&
      ((fn.body.type === 'BlockStatement' && fn.body.body.length === 0) ||
        (fn.body.type === 'Identifier' && fn.body.name === 'undefined') ||
        (fn.body.type === 'Literal' && fn.body.value === null) ||
        (fn.body.type === 'UnaryExpression' && fn.body.operator === 'void'));
    const statementOf = (node) => {
      let current = node;
      while (current.parent && !/Statement|Declaration$/.test(current.parent.type)) current = current.parent;
      return current.parent ?? current;
    };
    return {
      'CallExpression[callee.property.name="catch"]'(node) {
        const handler = node.arguments[0];
        if (!handler || !swallows(handler)) return;
        const first = statementOf(node).loc.start.line - 1;
        const last = handler.loc.end.line;
        const explained = source
          .getAllComments()
          .some((comment) => comment.loc.end.line >= first && comment.loc.start.line <= last);
        if (!explained) context.report({ node: handler, messageId: 'silent' });
      },
    };
  },
};

const ISSUE = 'docs/decisions/0038-service-interior-rooms.md';

// Packages whose whole purpose is I/O. `domain/` is pure logic: it gets its data through app/'s ports.
const IO_PACKAGES = [
  'pg',
  'pg-*',
  'ioredis',
  'nats',
  '@nats-io/*',
  'sharp',
  'drizzle-orm',
  'drizzle-orm/*',
  '@aws-sdk/*',
  'viem',
  'viem/*',
  'playwright-core',
  '@ffmpeg-installer/*',
  '@ffprobe-installer/*',
  '@cairn/db',
  '@cairn/bus',
  '@cairn/blob',
  '@cairn/rpc',
  '@cairn/runtime',
  '@cairn/outbound',
  '@cairn/isolate',
  '@cairn/isolate/*',
];
const IO_BUILTINS = ['fs', 'fs/promises', 'child_process', 'net', 'tls', 'http', 'https', 'http2', 'dgram', 'dns'];

const crossService = (svc) => ({
  regex: `^(\\.\\./)+(services/)?(${SERVICES.filter((other) => other !== svc).join('|')})/`,
  message: `services/${svc} imports another service's code; use its proto or its typed events (${ISSUE}).`,
});
const otherServicePackages = (svc) => ({
  group: SERVICES.filter((other) => other !== svc).flatMap((other) => [`@cairn/${other}`, `@cairn/${other}/*`]),
  message: `services/${svc} imports another service's package; use its proto or its typed events (${ISSUE}).`,
});

const domainRules = [
  {
    group: [...IO_PACKAGES, ...IO_BUILTINS, ...IO_BUILTINS.map((name) => `node:${name}`)],
    message: `domain/ is pure logic and does no I/O; take the data through a port in app/ (${ISSUE}).`,
  },
  {
    regex: '^\\.{1,2}/(\\.\\./)*(store|adapters|db|http|app)(/|\\.js$)|^\\.\\./(rpc|events|service|main)\\.js$',
    message: `domain/ imports nothing from the layers around it (store/, adapters/, db/, app/, rpc, http/) (${ISSUE}).`,
  },
];
const domainPaths = [
  {
    name: '@cairn/media',
    importNames: ['runFfmpeg', 'decodeAudioMono', 'probeFfmpeg', 'ffmpegPath'],
    message: `domain/ does not run ffmpeg; an adapter does (${ISSUE}).`,
  },
];
// app/ holds the use cases over ports it declares (app/ports.ts); store/ and adapters/ implement them and service.ts
// injects the implementations, so app/ never names store/ or adapters/ (not even their types: an implementation
// importing app/ports.ts would close a circle).
const appRules = [
  {
    regex: '^\\.{1,2}/(\\.\\./)*store(/|\\.js$)',
    message: `app/ reaches store/ only through the ports it declares in app/ports.ts; service.ts injects the store (${ISSUE}).`,
  },
  {
    regex: '^\\.{1,2}/(\\.\\./)*adapters(/|\\.js$)',
    message: `app/ reaches adapters/ only through the ports it declares in app/ports.ts; service.ts injects them (${ISSUE}).`,
  },
];
const mappingRules = [
  {
    regex: '^\\.{1,2}/(\\.\\./)*(store|db)(/|\\.js$)',
    message: `rpc.ts and http/ map between the wire and app/; SQL stays behind app/ in store/ (${ISSUE}).`,
  },
  {
    group: ['@cairn/db', 'drizzle-orm', 'drizzle-orm/*', 'pg'],
    message: `rpc.ts and http/ map between the wire and app/; SQL stays behind app/ in store/ (${ISSUE}).`,
  },
];

// The edge speaks HTTP and passes bytes: no decoder, no JUMBF, no C2PA library in the gateway (its package.json
// declares none; a workspace or root link would still resolve one, so the rule says it).
// docs/decisions/0036-thin-gateway.md.
const thinEdge = {
  group: ['sharp', '@cairn/media', '@cairn/jumbf', '@contentauth/*', '@ffmpeg-installer/*', '@ffprobe-installer/*'],
  message:
    'The gateway decodes no media and edits no manifest store: the service that owns those bytes does, behind a gRPC method (docs/decisions/0036-thin-gateway.md; magic-byte sniffing is @cairn/sniff).',
};

// One block per service and layer: `no-restricted-imports` options do not merge across blocks, so each block
// carries the cross-service rule (and the gateway's thin-edge rule) plus its layer's own.
const boundaryBlocks = SERVICES.flatMap((svc) => {
  const base = [crossService(svc), otherServicePackages(svc), ...(svc === 'gateway' ? [thinEdge] : [])];
  const root = `services/${svc}`;
  return [
    {
      files: [`${root}/**/*.{ts,js,mjs}`],
      rules: { 'no-restricted-imports': ['error', { patterns: base }] },
    },
    {
      files: [`${root}/src/domain/**/*.ts`],
      rules: { 'no-restricted-imports': ['error', { paths: domainPaths, patterns: [...base, ...domainRules] }] },
    },
    {
      files: [`${root}/src/app/**/*.ts`],
      rules: { 'no-restricted-imports': ['error', { patterns: [...base, ...appRules] }] },
    },
    {
      files: [`${root}/src/rpc.ts`, `${root}/src/http/**/*.ts`],
      rules: { 'no-restricted-imports': ['error', { patterns: [...base, ...mappingRules] }] },
    },
  ];
});

// tools/ holds what works on the fleet from outside (the dev scripts, the fleet-level benches, the anchor proof
// checker): it talks HTTP/gRPC to running services and shares code through packages/, never a service's source. A
// bench that measures one service's code lives beside it, in services/<svc>/bench/.
const toolsBlock = {
  files: ['tools/**/*.{ts,js,mjs}'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            regex: '^(\\.\\./)+services/[^/]+/(src|node_modules)/',
            message:
              "tools/ imports no service's source: put a bench of one service's code in services/<svc>/bench/, and code two places need in a package under packages/.",
          },
          {
            group: SERVICES.flatMap((svc) => [`@cairn/${svc}`, `@cairn/${svc}/*`]),
            message: "tools/ imports no service's package: talk to the service over HTTP/gRPC, or share a package.",
          },
        ],
      },
    ],
  },
};

// A use case reads as named steps (docs/decisions/0038-service-interior-rooms.md): a function in a service's source
// stays within 80 lines, or says why on the line above it
// (`// eslint-disable-next-line max-lines-per-function -- <why>`).
const longFunctionBlock = {
  files: ['services/*/src/**/*.ts'],
  rules: { 'max-lines-per-function': ['error', { max: 80 }] },
};

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      'tools/out/**',
      'coverage/**',
      '.cairn/**',
      'packages/proto/src/gen/**',
      'services/*/src/db/migrations/**',
      'charts/**',
    ],
  },
  {
    files: ['**/*.{ts,js,mjs,cjs}'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { cairn: { rules: { 'no-silent-catch': noSilentCatch } } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      // An empty catch must say why the error does not matter.
      'no-empty': ['error', { allowEmptyCatch: false }],
      'cairn/no-silent-catch': 'error',
      // Off on purpose: here `async` without `await` is how a method meets a Promise-returning interface (handlers,
      // ports, test doubles), and it turns a throw into a rejection; rewriting each into Promise.resolve is noise.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // Plain JavaScript (build scripts, configs) is not in the TypeScript project: syntax rules only.
    files: ['**/*.{js,mjs,cjs}'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  ...boundaryBlocks,
  toolsBlock,
  longFunctionBlock,
);
