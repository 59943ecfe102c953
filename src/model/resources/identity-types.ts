import { Type } from 'typebox';
import { baseFields } from '../schemas/common.js';
import { defineResource, selfLink } from '../resource.js';
import { fromJson } from '../../store/json.js';

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
    id: { column: 'e.id', type: 'string', sortable: true },
    name: { column: 'e.name', type: 'string', sortable: true },
    createdAt: { column: 'e.created_at', type: 'datetime', sortable: true },
    updatedAt: { column: 'e.updated_at', type: 'datetime', sortable: true },
  },
  toDetail: (r) => ({
    id: r.id,
    _links: selfLink('identity-types', r.id),
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    tags: fromJson(r.tags, {}),
    name: r.name,
  }),
  cli: { columns: ['id', 'name'] },
});
