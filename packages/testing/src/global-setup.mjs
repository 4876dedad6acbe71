// Jest loads globalSetup outside its transform pipeline, so the TypeScript is loaded through tsx here.
import { tsImport } from 'tsx/esm/api';

export default async function globalSetup() {
  const { provision } = await tsImport('./provision.ts', import.meta.url);
  await provision();
}
