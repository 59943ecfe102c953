// Kept equal to package.json's version (a unit test checks).
export const VERSION = '0.1.0';
export const BUILD_DATE = '2026-11-22T00:00:00Z';
export const REVISION = 'dev';
/** The upstream Edge API document version we implement. */
export const EDGE_API_VERSION = '0.26.28';
