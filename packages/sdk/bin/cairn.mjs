#!/usr/bin/env node
// The `cairn` command: the SDK's TypeScript sources run through tsx, as everything in this repository does.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
