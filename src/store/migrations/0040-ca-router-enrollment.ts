import type { Kysely, Migration } from 'kysely';

// Routers that enroll themselves (ztc's, for ziti#1390): a verified CA marked for it lets a router that
// presents a certificate it issued on the control channel be created and enrolled, with the CA's edge
// router role attributes.
export const caRouterEnrollment = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('cas').addColumn('is_edge_router_enrollment_enabled', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('cas').addColumn('edge_router_roles', 'text', (c) => c.notNull().defaultTo('[]')).execute();
  },
});
