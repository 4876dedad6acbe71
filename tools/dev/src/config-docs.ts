/**
 * Writes docs/configuration.md from the zod config shapes (`pnpm docs:config`); test/configuration-docs.test.ts
 * fails when the checked-in page differs from what this renders.
 *
 * Defaults come from the schemas themselves. What a variable means is the doc comment on its property in the shape
 * (read from the source with the TypeScript parser): a property without a comment of its own shares the row of the
 * one before it (`A` / `B`). A `@default <text>` tag says what happens when a variable with no schema default is
 * unset (a generated development key, the container's CPU limit); on a variable with a schema default it is refused,
 * so the page can never show a default the schema does not apply. Prose that is about no single variable lives in
 * tools/dev/config-docs.template.md.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { commonEnvShape, SERVICE_NAMES, type ServiceName } from '@cairn/config';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const TEMPLATE = join(ROOT, 'tools', 'dev', 'config-docs.template.md');
export const CONFIGURATION_DOC = join(ROOT, 'docs', 'configuration.md');

/** One property of a shape's object literal, as written: its doc comment, or a spread of another shape. */
type ShapeEntry =
  | { readonly kind: 'variable'; readonly name: string; readonly doc?: string; readonly shownDefault?: string }
  | { readonly kind: 'spread'; readonly shape: string };

/** Shapes spread into several services' shapes get one section of their own, listing who reads them. */
const SHARED_SHAPES: ReadonlyArray<{ readonly shape: string; readonly title: string }> = [
  { shape: 'mediaLimitsConfigShape', title: 'Media limits' },
  { shape: 'storedManifestConfigShape', title: 'Stored manifests' },
];

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts')) files.push(path);
  }
  return files;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** Every `const <x>Shape = { … }` of the packages' and services' sources, by name, with where it is. */
function readShapes(): Map<string, { readonly file: string; readonly entries: ShapeEntry[] }> {
  const shapes = new Map<string, { file: string; entries: ShapeEntry[] }>();
  const dirs = [
    ...readdirSync(join(ROOT, 'packages')).map((name) => join(ROOT, 'packages', name, 'src')),
    ...SERVICE_NAMES.map((name) => join(ROOT, 'services', name, 'src')),
  ];
  for (const file of dirs.flatMap((dir) => sourceFiles(dir))) {
    const text = readFileSync(file, 'utf8');
    if (!/Shape\s*=\s*\{/.test(text)) continue;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    for (const statement of source.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      for (const declaration of statement.declarationList.declarations) {
        if (!ts.isIdentifier(declaration.name) || !/Shape$/.test(declaration.name.text) || !declaration.initializer)
          continue;
        let literal: ts.Expression = declaration.initializer;
        while (ts.isAsExpression(literal) || ts.isSatisfiesExpression(literal)) literal = literal.expression;
        if (!ts.isObjectLiteralExpression(literal)) continue;
        shapes.set(declaration.name.text, { file: relative(ROOT, file), entries: literal.properties.map(entryOf) });
      }
    }
  }
  return shapes;
}

function entryOf(property: ts.ObjectLiteralElementLike): ShapeEntry {
  if (ts.isSpreadAssignment(property) && ts.isIdentifier(property.expression))
    return { kind: 'spread', shape: property.expression.text };
  if (!property.name || !(ts.isIdentifier(property.name) || ts.isStringLiteral(property.name)))
    throw new Error(`config shape property not understood: ${property.getText()}`);
  const name = property.name.text;
  const docs = ts.getJSDocCommentsAndTags(property).filter(ts.isJSDoc);
  const jsDoc = docs[docs.length - 1];
  if (!jsDoc) return { kind: 'variable', name };
  const doc = oneLine(ts.getTextOfJSDocComment(jsDoc.comment) ?? '');
  const defaultTag = jsDoc.tags?.find((tag) => tag.tagName.text === 'default');
  const shownDefault = defaultTag ? oneLine(ts.getTextOfJSDocComment(defaultTag.comment) ?? '') : undefined;
  return { kind: 'variable', name, doc, ...(shownDefault ? { shownDefault } : {}) };
}

/** What the generator reads of a zod 4 schema: its definition (`.def`, public in zod 4). */
interface SchemaDef {
  readonly def: { readonly type: string; readonly defaultValue?: unknown; readonly in?: SchemaDef };
}

type Shape = Readonly<Record<string, SchemaDef>>;

/** The schema's own default, unwrapping pipes (a transform after an optional input); undefined when it has none. */
function schemaDefault(schema: SchemaDef): { readonly value: unknown } | undefined {
  if (schema.def.type === 'default') return { value: schema.def.defaultValue };
  if (schema.def.type === 'pipe' && schema.def.in) return schemaDefault(schema.def.in);
  return undefined;
}

const MIB = 1024 * 1024;

function formatDefault(name: string, value: unknown): string {
  const shown = `\`${String(value)}\``;
  if (typeof value === 'number' && /BYTES$/.test(name) && value >= MIB && value % MIB === 0) {
    const mib = value / MIB;
    return `${shown} (${mib % 1024 === 0 ? `${mib / 1024} GiB` : `${mib} MiB`})`;
  }
  return shown;
}

interface Row {
  readonly names: string[];
  readonly defaults: string[];
  readonly meaning: string;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

/**
 * The rows of one shape's variables, in source order; spreads of shapes in `skip` are left out (they have their own
 * section), others are inlined.
 */
function rowsOf(
  shapeName: string,
  runtime: Shape,
  shapes: ReturnType<typeof readShapes>,
  skip: ReadonlySet<string>,
  seen: Set<string>,
): Row[] {
  const shape = shapes.get(shapeName);
  if (!shape) throw new Error(`config shape ${shapeName} not found in the sources`);
  const rows: Row[] = [];
  for (const entry of shape.entries) {
    if (entry.kind === 'spread') {
      if (!skip.has(entry.shape)) rows.push(...rowsOf(entry.shape, runtime, shapes, skip, seen));
      continue;
    }
    const schema = runtime[entry.name];
    if (!schema) throw new Error(`${shape.file}: ${entry.name} is not in the loaded shape`);
    seen.add(entry.name);
    const own = schemaDefault(schema);
    if (own && entry.shownDefault)
      throw new Error(`${shape.file}: ${entry.name} has a schema default; its @default tag would contradict it`);
    const shown = own ? formatDefault(entry.name, own.value) : (entry.shownDefault ?? 'unset');
    const previous = rows[rows.length - 1];
    if (entry.doc === undefined && previous) {
      previous.names.push(entry.name);
      previous.defaults.push(shown);
      continue;
    }
    if (entry.doc === undefined || entry.doc === '')
      throw new Error(`${shape.file}: ${entry.name} has no doc comment saying what it means`);
    rows.push({ names: [entry.name], defaults: [shown], meaning: entry.doc });
  }
  return rows;
}

function table(rows: Row[]): string {
  const lines = ['| variable | default | meaning |', '|---|---|---|'];
  for (const row of rows) {
    const names = row.names.map((name) => `\`${name}\``).join(' / ');
    const defaults = row.defaults.every((shown) => shown === row.defaults[0])
      ? (row.defaults[0] ?? '')
      : row.defaults.join(' / ');
    lines.push(`| ${names} | ${cell(defaults)} | ${cell(row.meaning)} |`);
  }
  return lines.join('\n');
}

/** A service's own shape, loaded: `<service>ConfigShape` of services/<service>/src/config.ts. */
async function serviceShape(service: ServiceName): Promise<Shape> {
  const module = (await import(pathToFileURL(join(ROOT, 'services', service, 'src', 'config.ts')).href)) as Record<
    string,
    unknown
  >;
  const shape = module[`${service}ConfigShape`];
  if (!shape || typeof shape !== 'object')
    throw new Error(`services/${service}/src/config.ts has no ${service}ConfigShape`);
  return shape as Shape;
}

/** The whole page. */
export async function renderConfigurationDoc(): Promise<string> {
  const shapes = readShapes();
  const loaded = new Map<ServiceName, Shape>();
  for (const service of SERVICE_NAMES) loaded.set(service, await serviceShape(service));
  const shared = new Set(SHARED_SHAPES.map(({ shape }) => shape));
  const sections: string[] = [];

  sections.push(
    `## Every service\n\nRead by all ten services (\`packages/config/src/load.ts\`).\n\n${table(
      rowsOf('commonEnvShape', commonEnvShape, shapes, shared, new Set()),
    )}`,
  );

  for (const { shape, title } of SHARED_SHAPES) {
    const readers = SERVICE_NAMES.filter((service) =>
      shapes.get(`${service}ConfigShape`)?.entries.some((entry) => entry.kind === 'spread' && entry.shape === shape),
    );
    const first = readers[0];
    if (!first) continue;
    const file = shapes.get(shape)?.file ?? '';
    sections.push(
      `## ${title}\n\nRead by ${readers.join(', ')} (\`${file}\`).\n\n${table(
        rowsOf(shape, loaded.get(first) ?? {}, shapes, new Set(), new Set()),
      )}`,
    );
  }

  for (const service of SERVICE_NAMES) {
    const runtime = loaded.get(service) ?? {};
    const seen = new Set<string>();
    const rows = rowsOf(`${service}ConfigShape`, runtime, shapes, shared, seen);
    for (const { shape } of SHARED_SHAPES)
      for (const entry of shapes.get(shape)?.entries ?? []) if (entry.kind === 'variable') seen.add(entry.name);
    const unread = Object.keys(runtime).filter((name) => !seen.has(name));
    if (unread.length) throw new Error(`${service}: variables not found in the source shapes: ${unread.join(', ')}`);
    const file = `services/${service}/src/config.ts`;
    sections.push(
      rows.length === 0
        ? `## ${service}\n\nNo settings of its own.`
        : `## ${service}\n\nRead by the ${service} service only (\`${file}\`).\n\n${table(rows)}`,
    );
  }

  const template = readFileSync(TEMPLATE, 'utf8');
  const marker = '<!-- variables -->';
  if (!template.includes(marker)) throw new Error(`${TEMPLATE} lacks the ${marker} marker`);
  return template.replace(marker, sections.join('\n\n'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(CONFIGURATION_DOC, await renderConfigurationDoc());
  process.stdout.write(`wrote ${relative(process.cwd(), CONFIGURATION_DOC)}\n`);
}
