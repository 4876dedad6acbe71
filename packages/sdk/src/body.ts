// Request bodies that can report upload progress. Web-platform globals only (Blob, ReadableStream, TextEncoder,
// crypto), like the client.

/** Bytes sent so far of `total`. */
export interface UploadProgress {
  sent: number;
  total: number;
}

export type ProgressListener = (progress: UploadProgress) => void;

/** A body ready for one fetch: built afresh for every attempt, since a stream can be read only once. */
export interface PreparedBody {
  body: NonNullable<RequestInit['body']>;
  headers: Record<string, string>;
  /** A stream body: fetch needs `duplex: 'half'` for it. */
  streamed: boolean;
  /** Called once the server has answered: a body that could not be counted reports itself whole then. */
  onSent?: () => void;
}

export type MultipartField = { name: string; value: string } | { name: string; file: Blob; filename: string };

/**
 * Whether a request body may be a stream with a Content-Length set by us. Node's fetch (undici) sends the header
 * as given, so the bytes can be counted as they leave; a browser refuses both (request streams there need
 * HTTP/2 and the length is the browser's to set), so it sends the Blob whole and reports progress at the end.
 */
const canStreamWithLength = typeof process === 'object' && typeof process.versions?.node === 'string';

/** `blob` as a stream that reports each chunk as it is read (the bytes read are the bytes handed to the socket). */
function counted(
  parts: Array<Uint8Array | Blob>,
  total: number,
  listener: ProgressListener,
): ReadableStream<Uint8Array> {
  let sent = 0;
  let index = 0;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (reader) {
          const { done, value } = await reader.read();
          if (!done) {
            sent += value.byteLength;
            listener({ sent, total });
            controller.enqueue(value);
            return;
          }
          reader = undefined;
        }
        const part = parts[index++];
        if (part === undefined) {
          controller.close();
          return;
        }
        if (part instanceof Uint8Array) {
          sent += part.byteLength;
          listener({ sent, total });
          controller.enqueue(part);
          return;
        }
        reader = part.stream().getReader();
      }
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  });
}

function quoted(value: string): string {
  // RFC 7578: a name or filename is a quoted string; quotes and line breaks would end it early.
  return value.replace(/[\r\n"]/g, (c) => encodeURIComponent(c));
}

/**
 * multipart/form-data. Without a listener it is a FormData (fetch encodes it); with one, in Node, the same
 * encoding is written by hand so its bytes can be counted as they stream, the file never held in memory.
 */
export function multipartBody(fields: MultipartField[], onProgress?: ProgressListener): () => PreparedBody {
  if (!onProgress || !canStreamWithLength) {
    return () => {
      const form = new FormData();
      for (const field of fields)
        if ('file' in field) form.append(field.name, field.file, field.filename);
        else form.append(field.name, field.value);
      const total = fields.reduce((sum, f) => sum + ('file' in f ? f.file.size : 0), 0);
      return {
        body: form,
        headers: {},
        streamed: false,
        ...(onProgress ? { onSent: () => onProgress({ sent: total, total }) } : {}),
      };
    };
  }
  const boundary = `----cairn-${crypto.randomUUID()}`;
  const encoder = new TextEncoder();
  const parts: Array<Uint8Array | Blob> = [];
  for (const field of fields) {
    if ('file' in field) {
      parts.push(
        encoder.encode(
          `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(field.name)}"; filename="${quoted(field.filename)}"\r\n` +
            `Content-Type: ${field.file.type || 'application/octet-stream'}\r\n\r\n`,
        ),
        field.file,
        encoder.encode('\r\n'),
      );
    } else {
      parts.push(
        encoder.encode(
          `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(field.name)}"\r\n\r\n${field.value}\r\n`,
        ),
      );
    }
  }
  parts.push(encoder.encode(`--${boundary}--\r\n`));
  const total = parts.reduce((sum, p) => sum + (p instanceof Uint8Array ? p.byteLength : p.size), 0);
  return () => ({
    body: counted(parts, total, onProgress),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(total) },
    streamed: true,
  });
}

/** A raw body (an upload session's PUT): the Blob as it is, counted while it streams where that is possible. */
export function rawBody(file: Blob, onProgress?: ProgressListener): () => PreparedBody {
  if (!onProgress || !canStreamWithLength) {
    return () => ({
      body: file,
      headers: {},
      streamed: false,
      ...(onProgress ? { onSent: () => onProgress({ sent: file.size, total: file.size }) } : {}),
    });
  }
  return () => ({
    body: counted([file], file.size, onProgress),
    headers: { 'content-length': String(file.size) },
    streamed: true,
  });
}
