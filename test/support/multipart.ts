// A multipart/form-data body as the gateway's upload routes take it. Its own module so that what talks HTTP to a
// fleet of processes (the fleet-level benches in tools/bench, the replica-kill run) loads no service code, as
// importing stack.ts would.
export function multipart(
  fields: Record<string, string>,
  file?: { field: string; bytes: Buffer; name: string; type?: string },
): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file)
    form.append(file.field, new Blob([file.bytes], { type: file.type ?? 'application/octet-stream' }), file.name);
  return form;
}
