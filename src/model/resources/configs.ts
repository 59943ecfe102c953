import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { Type } from 'typebox';
import type { Tx } from '../../store/db.js';
import { byIdOrName } from '../../store/by-id-or-name.js';
import { fromJson } from '../../store/json.js';
import { ApiError, couldNotValidate, referencedBy } from '../errors.js';
import { aliases, baseDetail, baseFilterable, defineResource, entityRef, type Row, type WriteMode } from '../resource.js';
import { baseFields, EntityRef, Name, Tags } from '../schemas/common.js';

const JsonObject = Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });

// One validator per schema text: compiling is the expensive part, and config writes repeat types.
// idn-hostname is declared but not checked, as upstream's validator (gojsonschema) has no such format
// and lets any string pass: upstream's own schema texts, posted here, then behave as they do there.
const ajv = addFormats.default(new Ajv.default({ allErrors: true, strict: false, formats: { 'idn-hostname': true } }));
const compiled = new Map<string, ValidateFunction>();

function validatorFor(schemaText: string): ValidateFunction {
  let v = compiled.get(schemaText);
  if (!v) {
    const schema = JSON.parse(schemaText) as Record<string, unknown>;
    delete schema.$id;
    v = ajv.compile(schema);
    if (compiled.size > 500) compiled.clear();
    compiled.set(schemaText, v);
  }
  return v;
}

/** A config type's schema must itself be a JSON schema ajv can compile. */
function checkSchema(schema: unknown) {
  try {
    validatorFor(JSON.stringify(schema ?? {}));
  } catch (e) {
    // COULD_NOT_VALIDATE, the code upstream gives a schema it cannot compile.
    throw couldNotValidate('schema', `is not a valid JSON schema: ${(e as Error).message}`, schema);
  }
}

/** 2.1: what a config type's configs are for; fixed when the type is made (service when not said). */
const CONFIG_TYPE_TARGETS = ['service', 'router', 'other'] as const;
const ConfigTypeTarget = Type.Union(CONFIG_TYPE_TARGETS.map((t) => Type.Literal(t)), { description: 'What the configs of this type are for: service (the default), router or other. Set at create, never changed' });
export const configTypeCreate = Type.Object({ name: Name, schema: Type.Optional(JsonObject), target: Type.Optional(Type.Union([ConfigTypeTarget, Type.Null()])), tags: Type.Optional(Tags) }, { additionalProperties: false });
export const configTypeUpdate = Type.Object({ name: Name, schema: Type.Optional(JsonObject), tags: Type.Optional(Tags) }, { additionalProperties: false });
export const configTypePatch = Type.Object({ name: Type.Optional(Name), schema: Type.Optional(JsonObject), tags: Type.Optional(Tags) }, { additionalProperties: false });
export const configTypeDetail = Type.Object({ ...baseFields, name: Type.String(), schema: JsonObject, target: ConfigTypeTarget });

export const configTypes = defineResource({
  name: 'config type',
  plural: 'config-types',
  table: 'configTypes',
  conflictsOn: ['delete'],
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Config types: named JSON schemas that configs of the type must match (intercept.v1, host.v1, ...)',
  schemas: { detail: configTypeDetail, create: configTypeCreate, update: configTypeUpdate, patch: configTypePatch },
  // `target` on an update or patch: upstream's update bodies have none, so a client's copy of the whole type is taken and the field left as it is.
  ignored: { id: Type.String({ maxLength: 255 }), target: Type.Union([Type.String({ maxLength: 16 }), Type.Null()]) },
  // `schema` is the JSON schema as stored text, as upstream filters it.
  filterable: { ...baseFilterable, name: { column: 'e.name', type: 'string', sortable: true }, schema: { column: 'e.schema', type: 'string', sortable: true }, target: { column: 'e.target', type: 'string', sortable: true } },
  toDetail: (r) => Object.assign(baseDetail('config-types', r, { configs: { href: `./config-types/${r.id}/configs` } }), { name: r.name, schema: fromJson(r.schema, {}), target: r.target ?? 'service' }),
  toRow: async (input: Row, mode: WriteMode, tx: Tx, _ctx, existing?: Row) => {
    const out: Row = {};
    if (mode !== 'patch' || 'name' in input) out.name = input.name;
    if (mode === 'create') out.target = input.target ?? 'service';
    if (mode !== 'patch' || 'schema' in input) {
      checkSchema(input.schema);
      out.schema = JSON.stringify(input.schema ?? {});
      // A new schema must still accept the configs already of this type.
      if (existing) {
        const validate = validatorFor(out.schema);
        const bad = (await tx.selectFrom('configs').select(['id', 'data']).where('configTypeId', '=', existing.id).execute()).find((c) => !validate(JSON.parse(c.data)));
        // Refused, where upstream accepts and leaves such configs unchecked: 400, the status its document
        // declares for the operation (a 409 would be unreadable to generated clients).
        if (bad) throw new ApiError(400, 'COULD_NOT_VALIDATE', `The new schema rejects config '${bad.id}' of this type: change the config first`, { field: 'schema', reason: `rejects config '${bad.id}'`, value: input.schema });
      }
    }
    return out;
  },
  hooks: {
    beforeDelete: async (tx, existing) => {
      // Upstream answers 500 here (a plain error from its store); the 409 and cause of its other referenced deletes say more.
      const used = await tx.selectFrom('configs').select('id').where('configTypeId', '=', existing.id).orderBy('id').limit(100).execute();
      if (used.length) throw referencedBy('configTypes', 'configs', used.map((u) => u.id), 'configTypeId');
    },
  },
  cli: { columns: ['id', 'name', 'target'] },
});

export const configCreate = Type.Object({ name: Name, configTypeId: Type.String({ minLength: 1, maxLength: 255 }), data: JsonObject, tags: Type.Optional(Tags) }, { additionalProperties: false });
export const configUpdate = Type.Object({ name: Name, data: JsonObject, tags: Type.Optional(Tags) }, { additionalProperties: false });
export const configPatch = Type.Object({ name: Type.Optional(Name), data: Type.Optional(JsonObject), tags: Type.Optional(Tags) }, { additionalProperties: false });
export const configDetail = Type.Object({ ...baseFields, name: Type.String(), configTypeId: Type.String(), configType: EntityRef, data: JsonObject });

/** The config type by id or (as clients often send) by name. */
const configType = (tx: Tx, ref: string) => byIdOrName<{ id: string; schema: string }>(tx, 'configTypes', ref, '*');

function checkData(schemaText: string, data: unknown) {
  const validate = validatorFor(schemaText);
  if (validate(data)) return;
  // The first complaint that names something: 'if'/'allOf' wrappers only say a branch failed.
  const errors = validate.errors ?? [];
  const e = errors.find((x) => !['if', 'allOf', 'anyOf', 'oneOf'].includes(x.keyword)) ?? errors[0];
  const path = (e?.instancePath ?? '').replace(/^\//, '').split('/').filter(Boolean);
  // Named inside the data, as upstream's schema validator names it (`port`, `portRanges.0.low`); a
  // missing or unknown field is named itself, an error about the whole document is upstream's `(root)`.
  const named = e?.params && 'missingProperty' in e.params ? String(e.params.missingProperty) : e?.params && 'additionalProperty' in e.params ? String(e.params.additionalProperty) : '';
  const field = [...path, named].filter(Boolean).join('.') || '(root)';
  const reason = e?.keyword === 'required' ? 'is required' : e?.keyword === 'additionalProperties' ? 'is not allowed (the type does not declare it)' : e?.keyword === 'not' ? 'must not be empty' : (e?.message ?? 'is not valid');
  const value = [...path, ...(named ? [named] : [])].reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), data);
  throw new ApiError(400, 'COULD_NOT_VALIDATE', `The config data does not match its type's schema: ${field} ${reason}`, { field, reason, value });
}

export const configs = defineResource({
  name: 'config',
  plural: 'configs',
  conflictsOn: ['delete'],
  touchesServices: true,
  table: 'configs',
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Configs: data of a config type that services carry to tunnelers and SDKs',
  schemas: { detail: configDetail, create: configCreate, update: configUpdate, patch: configPatch },
  // ZAC's edit form sends the type back; a config keeps its type (upstream's update and patch lack the field).
  ignored: { configTypeId: Type.String({ maxLength: 255 }) },
  filterable: {
    ...baseFilterable,
    name: { column: 'e.name', type: 'string', sortable: true },
    type: { column: 'e.config_type_id', type: 'string', sortable: true },
    ...aliases({ configTypeId: { column: 'e.config_type_id', type: 'string', sortable: true } }),
  },
  detailQuery: (db) => db.selectFrom('configs as e').innerJoin('configTypes as t', 't.id', 'e.configTypeId').selectAll('e').select('t.name as typeName') as never,
  toDetail: (r) => Object.assign(baseDetail('configs', r), { name: r.name, configTypeId: r.configTypeId, configType: entityRef('config-types', r.configTypeId, r.typeName), data: fromJson(r.data, {}) }),
  toRow: async (input: Row, mode: WriteMode, tx: Tx, _ctx, existing?: Row) => {
    const out: Row = {};
    if (mode !== 'patch' || 'name' in input) out.name = input.name;
    let typeId = existing?.configTypeId as string | undefined;
    if (mode === 'create') {
      const t = await configType(tx, input.configTypeId);
      if (!t) throw couldNotValidate('configTypeId', `no config type has the id or name '${input.configTypeId}'`, input.configTypeId);
      typeId = out.configTypeId = t.id;
    }
    if (mode !== 'patch' || 'data' in input) {
      const t = await tx.selectFrom('configTypes').select('schema').where('id', '=', typeId!).executeTakeFirstOrThrow();
      checkData(t.schema, input.data);
      out.data = JSON.stringify(input.data);
    }
    return out;
  },
  hooks: {
    beforeDelete: async (tx, existing) => {
      // Upstream answers 500 here ("config is in use by identity X for service Y"); ztc the 409 of its referenced deletes.
      const users = await tx.selectFrom('identityServiceConfigs').select('identityId').distinct().where('configId', '=', existing.id).orderBy('identityId').limit(100).execute();
      if (users.length) throw referencedBy('configs', 'identities', users.map((u) => u.identityId), 'serviceConfigs');
      // As upstream: the services that carried it simply no longer do (its CLI's `delete config` is a 200).
      await tx.deleteFrom('serviceConfigs').where('configId', '=', existing.id).execute();
    },
  },
  cli: { columns: ['id', 'name', 'configType.name'] },
});
