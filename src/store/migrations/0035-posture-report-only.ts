import type { Kysely, Migration } from 'kysely';

// Posture checks in report-only mode (ziti#2095): a check whose failures are recorded (events, a
// metric, failed service requests) without denying anything; and, on a failed service request, whether
// the session was granted anyway (only report-only checks failed) or refused.
export const postureReportOnly = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('posture_checks').addColumn('report_only', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('failed_service_requests').addColumn('report_only', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  },
});
