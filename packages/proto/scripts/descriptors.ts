// `pnpm gen` step after buf generate: builds the protos' FileDescriptorSet (with their doc comments) and writes
// packages/proto/src/gen/descriptors.ts, which carries it (for gRPC server reflection) and the internal API
// reference page rendered from its comments (served at the gateway's /docs/internal). Generated, not committed;
// a TypeScript module rather than files beside the code so the services' bundles carry both.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { fromBinary, isFieldSet } from '@bufbuild/protobuf';
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProtoSchema,
  FileDescriptorSetSchema,
  type FileDescriptorProto,
  type DescriptorProto,
  type EnumDescriptorProto,
} from '@bufbuild/protobuf/wkt';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const bytes = execFileSync('buf', ['build', '-o', '-#format=binpb'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
const set = fromBinary(FileDescriptorSetSchema, bytes);

const escape = (value: string): string =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/**
 * Doc comment of the element at `path` (source_code_info paths: in a file 4 = message, 5 = enum, 6 = service; in a
 * message 2 = field, 3 = nested message, 4 = nested enum, 8 = oneof; in an enum 2 = value; in a service 2 = method).
 */
function comment(file: FileDescriptorProto, path: number[]): string {
  const location = file.sourceCodeInfo?.location.find(
    (l) => l.path.length === path.length && l.path.every((p, i) => p === path[i]),
  );
  return (location?.leadingComments ?? '').trim().replace(/\n\s*/g, ' ');
}

function messageSection(file: FileDescriptorProto, message: DescriptorProto, path: number[], prefix: string): string {
  const name = `${prefix}${message.name}`;
  // oneof_index is proto2-optional (0 when unset), so presence says whether a field is in a oneof; a proto3
  // `optional` field sits in a synthetic oneof of its own, which is not worth naming.
  const declaredOneof = (f: DescriptorProto['field'][number]): number | undefined =>
    isFieldSet(f, FieldDescriptorProtoSchema.field.oneofIndex) && !f.proto3Optional ? f.oneofIndex : undefined;
  const oneofOf = (f: DescriptorProto['field'][number]): string => {
    const index = declaredOneof(f);
    return index === undefined ? '' : ` (oneof ${message.oneofDecl[index]?.name ?? ''})`;
  };
  // A map field's entry message is made by protoc, not written: the field shows map<key, value> instead.
  const mapEntry = (f: DescriptorProto['field'][number]): DescriptorProto | undefined =>
    message.nestedType.find((n) => n.options?.mapEntry && f.typeName === `.${file.package}.${name}.${n.name}`);
  const typeOf = (f: DescriptorProto['field'][number]): string => {
    const entry = mapEntry(f);
    if (entry) return `map<${entry.field.map(typeOf).join(', ')}>`;
    const type = f.typeName ? f.typeName.replace(/^\./, '') : fieldType(f.type);
    return f.label === FieldDescriptorProto_Label.REPEATED ? `${type} (repeated)` : type;
  };
  const rows = message.field
    .map(
      (f, i) =>
        `<tr><td><code>${escape(f.name)}</code></td><td><code>${escape(typeOf(f))}</code>${escape(oneofOf(f))}</td><td>${escape(comment(file, [...path, 2, i]))}</td></tr>`,
    )
    .join('');
  const oneofs = message.oneofDecl
    .map((o, i) => ({ o, i }))
    .filter(({ i }) => message.field.some((f) => declaredOneof(f) === i))
    .map(({ o, i }) => `<p>oneof <code>${escape(o.name)}</code>: ${escape(comment(file, [...path, 8, i]))}</p>`)
    .join('');
  const nested = message.nestedType
    .map((n, i) => (n.options?.mapEntry ? '' : messageSection(file, n, [...path, 3, i], `${name}.`)))
    .join('');
  const enums = message.enumType.map((e, i) => enumSection(file, e, [...path, 4, i], `${name}.`)).join('');
  return `<section id="${escape(`${file.package}.${name}`)}"><h4>${escape(name)}</h4><p>${escape(comment(file, path))}</p>${oneofs}${rows ? `<table><tr><th>Field</th><th>Type</th><th>About</th></tr>${rows}</table>` : ''}</section>${nested}${enums}`;
}

function enumSection(file: FileDescriptorProto, e: EnumDescriptorProto, path: number[], prefix: string): string {
  const name = `${prefix}${e.name}`;
  const rows = e.value
    .map(
      (v, i) =>
        `<tr><td><code>${escape(v.name)}</code></td><td>${v.number}</td><td>${escape(comment(file, [...path, 2, i]))}</td></tr>`,
    )
    .join('');
  return `<section id="${escape(`${file.package}.${name}`)}"><h4>enum ${escape(name)}</h4><p>${escape(comment(file, path))}</p><table><tr><th>Value</th><th>Number</th><th>About</th></tr>${rows}</table></section>`;
}

const SCALARS: Record<number, string> = {
  1: 'double',
  2: 'float',
  3: 'int64',
  4: 'uint64',
  5: 'int32',
  8: 'bool',
  9: 'string',
  12: 'bytes',
  13: 'uint32',
  17: 'sint32',
  18: 'sint64',
};
const fieldType = (type: number): string => SCALARS[type] ?? `type ${type}`;

const files = set.file.filter((f) => f.package.startsWith('cairn.'));
const body = files
  .map((file) => {
    const services = file.service
      .map((s, si) => {
        const methods = s.method
          .map(
            (m, mi) =>
              `<tr><td><code>${escape(m.name)}</code></td><td><code>${escape(m.inputType.replace(/^\./, ''))}</code> → <code>${escape(m.outputType.replace(/^\./, ''))}</code></td><td>${escape(comment(file, [6, si, 2, mi]))}</td></tr>`,
          )
          .join('');
        return `<section id="${escape(`${file.package}.${s.name}`)}"><h3>${escape(`${file.package}.${s.name}`)}</h3><p>${escape(comment(file, [6, si]))}</p><table><tr><th>Method</th><th>Request → answer</th><th>About</th></tr>${methods}</table></section>`;
      })
      .join('');
    const messages = file.messageType.map((m, i) => messageSection(file, m, [4, i], '')).join('');
    const enums = file.enumType.map((e, i) => enumSection(file, e, [5, i], '')).join('');
    return `<article><h2>${escape(file.package)} <small>${escape(file.name)}</small></h2>${services}${enums ? `<details><summary>Enums</summary>${enums}</details>` : ''}${messages ? `<details><summary>Messages</summary>${messages}</details>` : ''}</article>`;
  })
  .join('\n');

const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Internal gRPC API — Cairn</title>
<style>body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#202124}main{max-width:1100px;margin:0 auto;padding:24px 16px 48px}
table{border-collapse:collapse;width:100%;margin:8px 0 16px}th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #e8eaed;vertical-align:top}
code{font-size:13px}h2 small{color:#5f6368;font-weight:normal;font-size:14px}section{margin-left:8px}</style></head>
<body><main><h1>Cairn internal gRPC API</h1>
<p>Every service serves gRPC server reflection, so <code>grpcurl -cacert ca.pem -cert you.pem -key you-key.pem cairn-signer:50051 list</code>
lists its services and <code>describe</code> shows these comments. Generated from the protos by <code>pnpm gen</code>.</p>
<h2>Getting credentials</h2>
<p>The services speak gRPC over mutual TLS: a caller presents a client certificate issued by the fleet CA and checks the
server's name (<code>cairn-&lt;service&gt;</code>). A team that calls the services asks the platform operators for a certificate
from that CA (in a cluster, the <code>cairn-grpc-tls</code> Secret holds the CA and each service's pair; locally,
<code>npm run up</code> writes a dev CA and certificates under <code>.cairn/tls</code>). Any fleet certificate may call any
method today, so a certificate is issued only to callers trusted with the whole internal API. Events are on NATS
JetStream, where each caller gets its own NATS user with subject permissions (packages/bus permissions.ts).</p>
${body}
</main></body></html>
`;

const out = fileURLToPath(new URL('../src/gen/descriptors.ts', import.meta.url));
writeFileSync(
  out,
  `// Generated by packages/proto/scripts/descriptors.ts (pnpm gen). Do not edit.\n` +
    `/** The protos' FileDescriptorSet (buf build, doc comments kept), base64. */\n` +
    `export const FILE_DESCRIPTOR_SET_BASE64 = ${JSON.stringify(Buffer.from(bytes).toString('base64'))};\n` +
    `/** The internal API reference page, rendered from the descriptors' comments. */\n` +
    `export const INTERNAL_API_REFERENCE_HTML = ${JSON.stringify(html)};\n`,
);
console.log(`wrote ${out} (${files.length} files)`);
