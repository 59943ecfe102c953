import type { Kysely, Migration } from 'kysely';
import { baseEntity } from './columns.js';

// What the control channel knows of upstream routers, kept where every controller on the database and
// the Fabric API can read it: the links routers report between them, the circuits routed across them
// (each row names the controller that routed it: its rows go when it restarts), and each router's link
// listeners (what its peers are told to dial) and build (its hello's version header).
export const fabricState = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('routers').addColumn('link_listeners', 'text', (c) => c.notNull().defaultTo('[]')).execute();
    await db.schema.alterTable('routers').addColumn('version_info', 'varchar(512)').execute();
    await baseEntity(db.schema.createTable('links'))
      .addColumn('src_router_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('dst_router_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('protocol', 'varchar(64)', (c) => c.notNull())
      .addColumn('dial_address', 'varchar(1024)', (c) => c.notNull())
      .addColumn('iteration', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('static_cost', 'integer', (c) => c.notNull().defaultTo(1))
      // Latencies the routers at each end measure (ns, from their metrics) and the cost they make.
      .addColumn('src_latency', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('dst_latency', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('cost', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('controller_id', 'varchar(64)', (c) => c.notNull())
      .execute();
    await baseEntity(db.schema.createTable('circuits'))
      .addColumn('service_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('client_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('host_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('terminator_id', 'varchar(1024)', (c) => c.notNull())
      .addColumn('router_ids', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('link_ids', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('controller_id', 'varchar(64)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('circuits_controller').on('circuits').column('controller_id').execute();
    await db.schema.createIndex('links_controller').on('links').column('controller_id').execute();
    // Routers are sent the API sessions made since the last second's look: by creation time.
    await db.schema.createIndex('api_sessions_created_at').on('api_sessions').column('created_at').execute();
  },
});
