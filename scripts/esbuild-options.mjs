// The esbuild options every bundle of the program shares (npm run build's CLI bundle, npm run
// package's single executable and its threads).
export const nodeBundle = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  minify: false,
  legalComments: 'none',
  logLevel: 'warning',
};

/** An ES module bundle: dependencies written as CommonJS call require(), so it gets one. */
export const esmBundle = {
  ...nodeBundle,
  format: 'esm',
  banner: { js: "import { createRequire as __ztcRequire } from 'node:module'; const require = __ztcRequire(import.meta.url);" },
};
