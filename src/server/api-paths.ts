// Where each API is mounted: imported by the CLI's local transport too, so it holds nothing else.
export const API_PATHS = { client: '/edge/client/v1', management: '/edge/management/v1' } as const;
export const FABRIC_PATH = '/fabric/v1';

export type MountedApi = 'client' | 'management' | 'fabric' | 'docs';

/** The API a path belongs to (paths outside the prefixes, such as /version, are served by every app). */
export function apiOfPath(url: string): MountedApi {
  if (url.startsWith(API_PATHS.client)) return 'client';
  if (url.startsWith(FABRIC_PATH)) return 'fabric';
  if (url.startsWith('/docs')) return 'docs';
  return 'management';
}
