// The response envelope of both APIs: {data, meta}. Errors are rendered by plugins/errors.ts.
export const API_VERSION = '0.0.1';
export const API_ENROLLMENT_VERSION = '0.0.1';

export const meta = () => ({ apiVersion: API_VERSION, apiEnrollmentVersion: API_ENROLLMENT_VERSION });

export const ok = (data: unknown) => ({ data, meta: meta() });

export const empty = () => ok({});

export const listOf = (data: unknown[], pagination: { limit: number; offset: number; totalCount: number }, filterableFields: string[]) => ({
  data,
  meta: { ...meta(), filterableFields, pagination },
});
