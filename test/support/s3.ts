import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

const S3RVER_SCRIPT = `
import S3rver from 's3rver';
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: process.argv[1] });
const { port } = await server.run();
process.stdout.write(port + '\\n');
`;

/**
 * s3rver over `directory` in a process of its own (so memory measured in the test's process is not the S3
 * server's), and its endpoint once it listens. The caller kills the process.
 */
export async function spawnS3rver(directory: string): Promise<{ process: ChildProcess; endpoint: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', S3RVER_SCRIPT, directory], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  return { process: child, endpoint: `http://127.0.0.1:${Number(line.toString().trim())}` };
}

/** A client of the s3rver at `endpoint` (its fixed credentials, path-style), with `bucket` made. */
export async function s3rverBucket(endpoint: string, bucket: string): Promise<S3Client> {
  const s3 = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  return s3;
}
