// ESM + swc: tests import the TypeScript sources of the workspace directly.
const swc = ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }];

export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': swc },
  testMatch: [
    '<rootDir>/packages/*/test/**/*.test.ts',
    '<rootDir>/services/*/test/**/*.test.ts',
    '<rootDir>/tools/*/test/**/*.test.ts',
    '<rootDir>/test/**/*.test.ts',
  ],
  globalSetup: '<rootDir>/packages/testing/src/global-setup.mjs',
  testTimeout: 60000,
  maxWorkers: 2,
};
