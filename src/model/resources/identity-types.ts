import { Type } from 'typebox';
import { baseFields } from '../schemas/common.js';
import { baseDetail, baseFilterable, defineResource } from '../resource.js';

/** Seeded at first start; ids equal names, as upstream 0.26. */
export const IDENTITY_TYPES = ['User', 'Device', 'Service', 'Router', 'Default'] as const;

export const identityTypes = defineResource({
  name: 'identity type',
  plural: 'identity-types',
  table: 'identityTypes',
  apis: ['management'],
  ops: ['list', 'get'],
  description: 'Kinds of identity (User, Device, Service, Router, Default)',
  schemas: { detail: Type.Object({ ...baseFields, name: Type.String() }) },
  filterable: {
    ...baseFilterable,
    name: { column: 'e.name', type: 'string', sortable: true },
  },
  toDetail: (r) => ({
    ...baseDetail('identity-types', r),
    name: r.name,
  }),
  cli: { columns: ['id', 'name'] },
});
