import { Type } from 'typebox';
import { baseFields } from '../schemas/common.js';
import { baseDetail, baseFilterable, defineResource } from '../resource.js';

/** The types stored and listed, as upstream 1.x: ids equal names. */
export const IDENTITY_TYPES = ['Default', 'Router'] as const;

/**
 * The names a request may send: the API document's enum still lists upstream 0.x's five. Upstream 1.x
 * stores every one but Router as Default, so clients written against either version keep working.
 */
export const IDENTITY_TYPE_INPUTS = ['User', 'Device', 'Service', 'Router', 'Default'] as const;

/** The stored type for a requested one (upstream 1.x: Router stays Router, anything else is Default). */
export const storedIdentityType = (requested: string): (typeof IDENTITY_TYPES)[number] => (requested === 'Router' ? 'Router' : 'Default');

export const identityTypes = defineResource({
  name: 'identity type',
  plural: 'identity-types',
  table: 'identityTypes',
  apis: ['management'],
  ops: ['list', 'get'],
  description: 'Kinds of identity (Default, Router)',
  schemas: { detail: Type.Object({ ...baseFields, name: Type.String() }) },
  filterable: {
    ...baseFilterable,
    name: { column: 'e.name', type: 'string', sortable: true },
  },
  toDetail: (r) => Object.assign(baseDetail('identity-types', r), {
    name: r.name,
  }),
  cli: { columns: ['id', 'name'] },
});
