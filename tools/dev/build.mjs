#!/usr/bin/env node
// Bundles the services for `node services/<svc>/dist/main.js` (the local fleet and the Dockerfile):
//
//   node tools/dev/build.mjs [svc ...]      (default: all nine)
//
// The workspace's @cairn/* packages (whose package.json `exports` point at TypeScript sources) are bundled
// in; every other bare import (npm packages, node: builtins) stays external and is resolved by Node at run
// time, so native addons and packages that read their own files keep working.
import { cp, rm, stat, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import * as esbuild from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// The one list of services lives in packages/config/src/fleet.ts; read it rather than repeat it (this
// script runs with plain node, so it cannot import the TypeScript module).
async function serviceNames() {
  const source = await readFile(join(root, 'packages/config/src/fleet.ts'), 'utf8');
  const list = /SERVICE_NAMES\s*=\s*\[([^\]]*)\]/.exec(source);
  if (!list) throw new Error('cannot find SERVICE_NAMES in packages/config/src/fleet.ts');
  return [...list[1].matchAll(/'([a-z0-9-]+)'/g)].map((m) => m[1]);
}

const builtins = new Set(builtinModules);

/** `pkg/sub/path` → `pkg`, `@scope/pkg/sub` → `@scope/pkg`. */
function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * Bundles @cairn/* and keeps every other bare import external. Records, for each external npm package, the
 * directory it resolved to from the importing file, so that it can be made resolvable from dist/ below.
 */
function workspaceOnly(externals) {
  return {
    name: 'cairn-workspace-only',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.path.startsWith('@cairn/')) return undefined; // esbuild resolves it through the workspace link
        if (args.path.startsWith('node:') || builtins.has(args.path)) return { path: args.path, external: true };
        const name = packageName(args.path);
        if (!externals.has(name) && args.resolveDir)
          externals.set(name, { from: args.resolveDir, importer: args.importer });
        return { path: args.path, external: true };
      });
    },
  };
}

async function isDirectory(path) {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/**
 * The bundle keeps npm packages external, so the service must be able to resolve every one it imports: each
 * bare import of bundled workspace code has to be one of the service's own `dependencies`. Those are all its
 * image carries (`pnpm deploy --prod`): the @cairn/* workspace packages are inlined here, so they are
 * devDependencies, and a package found only through another workspace package or the repository root would
 * run locally and fail in the container.
 */
function assertDependenciesDeclared(name, manifest, externals) {
  const declared = new Set(Object.keys(manifest.dependencies ?? {}));
  const missing = [...externals.keys()].filter((dep) => !declared.has(dep));
  if (missing.length > 0) {
    throw new Error(`${name}: add to services/${name}/package.json dependencies: ${missing.join(', ')}`);
  }
}

async function buildService(name) {
  const started = performance.now();
  const serviceDir = join(root, 'services', name);
  const src = join(serviceDir, 'src');
  if (!(await isDirectory(src))) throw new Error(`no such service: services/${name}/src`);
  const outdir = join(serviceDir, 'dist');
  await rm(outdir, { recursive: true, force: true });

  const entryPoints = { main: join(src, 'main.ts') };
  if (existsSync(join(src, 'cli.ts'))) entryPoints.cli = join(src, 'cli.ts');
  // Scripts a service starts as processes or worker threads (`"cairn": { "entries": { name: path } }` in its
  // package.json) become dist/<name>.js next to main.js, where the code resolves them.
  const manifest = JSON.parse(await readFile(join(serviceDir, 'package.json'), 'utf8'));
  for (const [entry, path] of Object.entries(manifest.cairn?.entries ?? {}))
    entryPoints[entry] = join(serviceDir, path);

  const externals = new Map();
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints,
    outdir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    // Entry chunk names are fixed (main.js, cli.js); shared code is not split, each entry stands alone.
    splitting: false,
    logLevel: 'silent',
    metafile: true,
    legalComments: 'none',
    // CommonJS dependencies inlined by a workspace package, if any, still find require/__dirname in ESM.
    banner: {
      js: [
        "import { createRequire as __cairnCreateRequire } from 'node:module';",
        "import { fileURLToPath as __cairnFileURLToPath } from 'node:url';",
        "import { dirname as __cairnDirname } from 'node:path';",
        'const require = __cairnCreateRequire(import.meta.url);',
        'const __filename = __cairnFileURLToPath(import.meta.url);',
        'const __dirname = __cairnDirname(__filename);',
      ].join('\n'),
    },
    plugins: [workspaceOnly(externals)],
  });
  for (const warning of result.warnings) process.stderr.write(`${name}: warning: ${warning.text}\n`);

  // Data a service reads at run time beside its code (new URL('./…', import.meta.url) from src/service.ts).
  for (const data of [join('db', 'migrations'), 'trust-lists']) {
    if (await isDirectory(join(src, data))) await cp(join(src, data), join(outdir, data), { recursive: true });
  }

  // A package loaded at run time through createRequire (`require('@ffmpeg-installer/ffmpeg')` in @cairn/media) is
  // no import esbuild resolves, so the plugin never sees it: found by its literal in the bundle instead (esbuild
  // renames that local `require` to require2, … beside the banner's own).
  for (const [file] of Object.entries(result.metafile.outputs)) {
    if (!file.endsWith('.js')) continue;
    const code = await readFile(join(root, file), 'utf8');
    for (const match of code.matchAll(/\brequire\d*\(\s*["']([^"'./][^"']*)["']\s*\)/g)) {
      const dep = match[1];
      if (dep.startsWith('node:') || builtins.has(dep)) continue;
      const pkg = packageName(dep);
      if (!externals.has(pkg)) externals.set(pkg, { from: serviceDir, importer: file });
    }
  }
  assertDependenciesDeclared(name, manifest, externals);

  let bytes = 0;
  for (const [file, output] of Object.entries(result.metafile.outputs)) if (file.endsWith('.js')) bytes += output.bytes;
  const ms = performance.now() - started;
  const files = Object.keys(entryPoints)
    .map((e) => `${e}.js`)
    .join(', ');
  process.stdout.write(
    `built ${name.padEnd(12)} ${(bytes / 1024).toFixed(0).padStart(6)} KiB  ${ms.toFixed(0).padStart(5)} ms  (${relative(root, outdir)}${sep}{${files}})\n`,
  );
}

async function main() {
  const all = await serviceNames();
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(
      `Usage: node tools/dev/build.mjs [service ...]\n\nServices: ${all.join(', ')} (default: all)\n`,
    );
    return 0;
  }
  const unknown = args.filter((a) => !all.includes(a));
  if (unknown.length) {
    process.stderr.write(`build: unknown service(s): ${unknown.join(', ')} (known: ${all.join(', ')})\n`);
    return 2;
  }
  const targets = args.length ? args : all;
  let failed = 0;
  // One at a time: the links into services/node_modules are shared, and esbuild is fast anyway.
  for (const name of targets) {
    try {
      await buildService(name);
    } catch (error) {
      failed++;
      const errors = error && Array.isArray(error.errors) && error.errors.length ? error.errors : undefined;
      if (errors) {
        const text = await esbuild.formatMessages(errors, { kind: 'error', color: process.stderr.isTTY });
        process.stderr.write(`build ${name} failed:\n${text.join('')}`);
      } else {
        process.stderr.write(`build ${name} failed: ${error instanceof Error ? error.message : String(error)}\n`);
      }
    }
  }
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`build: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
