// Posture checks: a type (posture-check-types.ts lists them) plus that type's own fields, kept as JSON
// in `data`. Service policies select checks by role, like any entity.
import { Value } from 'typebox/value';
import { Type } from 'typebox';
import type { Tx } from '../../store/db.js';
import { fromJson, isSet, sortedStrings } from '../../store/json.js';
import { couldNotValidate, invalidField } from '../errors.js';
import { normaliseCheckData } from '../posture/clean.js';
import { aliases, baseDetail, baseFilterable, defineResource, jsonField, type Row, type WriteMode } from '../resource.js';
import { Attributes, baseFields, Name, Tags } from '../schemas/common.js';

export const OS_TYPES = ['Windows', 'WindowsServer', 'Android', 'iOS', 'Linux', 'macOS'] as const;
export const CHECK_TYPES = ['OS', 'PROCESS', 'PROCESS_MULTI', 'DOMAIN', 'MAC', 'MFA'] as const;
export type CheckType = (typeof CHECK_TYPES)[number];


const OsType = Type.Union(OS_TYPES.map((t) => Type.Literal(t)));
const Strings = (o: { minItems?: number } = {}) => Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { maxItems: 1000, ...o });
const typeFields = {
  domains: Type.Optional(Strings({ minItems: 1 })),
  macAddresses: Type.Optional(Strings({ minItems: 1 })),
  operatingSystems: Type.Optional(Type.Array(Type.Object({ type: OsType, versions: Type.Optional(Strings()) }, { additionalProperties: false }), { minItems: 1, maxItems: 100 })),
  process: Type.Optional(Type.Object({ osType: OsType, path: Type.String({ minLength: 1, maxLength: 1024 }), hashes: Type.Optional(Strings()), signerFingerprint: Type.Optional(Type.String({ maxLength: 1024 })) }, { additionalProperties: false })),
  processes: Type.Optional(Type.Array(Type.Object({ osType: OsType, path: Type.String({ minLength: 1, maxLength: 1024 }), hashes: Type.Optional(Strings()), signerFingerprints: Type.Optional(Strings()) }, { additionalProperties: false }), { minItems: 1, maxItems: 100 })),
  semantic: Type.Optional(Type.Union([Type.Literal('AllOf'), Type.Literal('AnyOf')])),
  timeoutSeconds: Type.Optional(Type.Integer({ minimum: -1, maximum: 2 ** 31 - 1 })),
  promptOnWake: Type.Optional(Type.Boolean()),
  promptOnUnlock: Type.Optional(Type.Boolean()),
  ignoreLegacyEndpoints: Type.Optional(Type.Boolean()),
};
/** Each type's own fields: the required ones first. */
const FIELDS: Record<CheckType, { required: string[]; optional: string[] }> = {
  DOMAIN: { required: ['domains'], optional: [] },
  MAC: { required: ['macAddresses'], optional: [] },
  OS: { required: ['operatingSystems'], optional: [] },
  PROCESS: { required: ['process'], optional: [] },
  PROCESS_MULTI: { required: ['processes', 'semantic'], optional: [] },
  MFA: { required: [], optional: ['timeoutSeconds', 'promptOnWake', 'promptOnUnlock', 'ignoreLegacyEndpoints'] },
};
const CheckTypeT = Type.Union(CHECK_TYPES.map((t) => Type.Literal(t)));
/**
 * The body accepts every type's fields in a loose shape: upstream decodes a body as its type's own
 * definition and ignores the rest, and ZAC sends all of them, the other types' empty (`domains: []`,
 * `process: {osType: ""}` on an MFA check). A check's own fields get their strict shape in typeData.
 */
const typesTaking = (k: string) => CHECK_TYPES.filter((t) => [...FIELDS[t].required, ...FIELDS[t].optional].includes(k)).join(', ');
const looseTypeFields = Object.fromEntries(
  Object.entries(typeFields).map(([k, strict]) => {
    const description = `Checked for the types that take ${k} (${typesTaking(k)}); ignored on the others`;
    // Lists and objects keep their kind (the CLI builds its options from it); their contents are checked later.
    const kind = (strict as { type?: string }).type;
    const loose = kind === 'array' ? Type.Array(Type.Unknown(), { description }) : kind === 'object' ? Type.Object({}, { additionalProperties: true, description }) : { ...strict, description };
    return [k, Type.Optional(loose)];
  }),
);
/**
 * ztc's addition (ziti#2095): a report-only check never denies; its failures are recorded (a posture
 * event, ztc_posture_check_failures_total, the identity's failed service requests) so a check can be
 * rolled out and watched before it is enforced.
 */
const ReportOnly = Type.Boolean({ description: 'Record failures of this check (events, metrics, failed service requests) without denying access; default false' });
const common = { roleAttributes: Type.Optional(Attributes), tags: Type.Optional(Tags), reportOnly: Type.Optional(ReportOnly), ...looseTypeFields };

export const postureCheckDetail = Type.Object({ ...baseFields, name: Type.String(), typeId: Type.String(), version: Type.Integer(), roleAttributes: Type.Array(Type.String()), reportOnly: Type.Boolean() }, { additionalProperties: true });

/**
 * A null inside a type's field is an unset Go field: `ziti edge create posture-check process-multi`
 * sends `"hashes": null, "signerFingerprints": null` for a process without them, and upstream takes it.
 */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, withoutNulls(x)]));
  return v;
}

/** The type's fields of a request, checked: the required ones present and well-formed; another type's ignored, as upstream. */
function typeData(typeId: CheckType, input: Row, previous: Row, mode: WriteMode): Row {
  const spec = FIELDS[typeId];
  const own = [...spec.required, ...spec.optional];
  const data: Row = mode === 'patch' ? { ...previous } : {};
  for (const k of own) {
    if (!(k in input)) continue;
    const value = withoutNulls(input[k]);
    const error = Value.Errors(typeFields[k as keyof typeof typeFields], value)[0];
    if (error) {
      const field = `${k}${error.instancePath.replace(/\//g, '.')}`;
      const at = error.instancePath.split('/').slice(1).reduce<unknown>((v, p) => (v as Record<string, unknown> | undefined)?.[p], value);
      // An OS type outside the list: upstream's words and the one value, not the whole list.
      if (/\.(type|osType)$/.test(field)) throw couldNotValidate(field, `${field} in body should be one of [${OS_TYPES.join(' ')}]`, at);
      // COULD_NOT_VALIDATE naming the missing field itself (process.path), as upstream's document checks do.
      const missing = error.keyword === 'required' ? (error.params as { requiredProperties?: string[] }).requiredProperties?.[0] : undefined;
      if (missing) throw couldNotValidate(`${field}.${missing}`, `${field}.${missing} in body is required`, null);
      throw couldNotValidate(field, error.message, value);
    }
    data[k] = value;
  }
  for (const k of spec.required) if (data[k] === undefined) throw couldNotValidate(k, `${k} in body is required`, null);
  if (typeId === 'MFA') data.timeoutSeconds ??= -1;
  return normaliseCheckData(typeId, data);
}

export const postureChecks = defineResource({
  // `ziti edge create posture-check os|process` sends {"Type": ..., "Versions": ...} (untagged Go structs).
  caseInsensitiveKeys: Type.Object({ name: Name, typeId: CheckTypeT, roleAttributes: Attributes, tags: Tags, reportOnly: ReportOnly, ...typeFields }),
  name: 'posture check',
  plural: 'posture-checks',
  table: 'postureChecks',
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Posture checks: conditions on the client device (OS, running processes, domain, MAC address, MFA) that service policies can require',
  schemas: {
    detail: postureCheckDetail,
    create: Type.Object({ name: Name, typeId: CheckTypeT, ...common }, { additionalProperties: false }),
    update: Type.Object({ name: Name, typeId: Type.Optional(CheckTypeT), ...common }, { additionalProperties: false }),
    // As upstream, a patch names the check's type (it selects which fields apply); it cannot change it.
    patch: Type.Object({ name: Type.Optional(Name), typeId: CheckTypeT, ...common }, { additionalProperties: false }),
  },
  roleAttributes: 'roleAttributes',
  policySide: 'posture-check',
  touchesServices: true,
  filterable: {
    ...baseFilterable,
    name: { column: 'e.name', type: 'string', sortable: true },
    promptOnUnlock: jsonField('e.data', ['promptOnUnlock'], 'boolean'),
    promptOnWake: jsonField('e.data', ['promptOnWake'], 'boolean'),
    ...aliases({
      // ztc's own field (ziti#2095): filterable, not among upstream's symbols.
      reportOnly: { column: 'e.report_only', type: 'boolean', sortable: true },
      typeId: { column: 'e.type_id', type: 'string', sortable: true },
      roleAttributes: { column: 'e.role_attributes', type: 'set', indexed: true },
    }),
  },
  // The type's own fields first, the base fields over them.
  toDetail: (r) => Object.assign(normaliseCheckData(r.typeId, fromJson<Row>(r.data, {})), baseDetail('posture-checks', r), {
    name: r.name,
    typeId: r.typeId,
    version: Number(r.version),
    roleAttributes: sortedStrings(r.roleAttributes),
    reportOnly: isSet(r.reportOnly),
  }),
  toRow: async (input: Row, mode: WriteMode, _tx: Tx, _ctx, existing?: Row) => {
    const typeId = (input.typeId ?? existing?.typeId) as CheckType;
    if (existing && input.typeId && input.typeId !== existing.typeId) throw invalidField('typeId', `a posture check keeps its type (${existing.typeId}): create a new check instead`, input.typeId);
    const out: Row = { data: JSON.stringify(typeData(typeId, input, fromJson<Row>(existing?.data, {}), mode)) };
    if (mode === 'create') out.typeId = typeId;
    else out.version = Number(existing?.version ?? 1) + 1;
    if (mode !== 'patch' || 'name' in input) out.name = input.name;
    if (mode !== 'patch' || 'roleAttributes' in input) out.roleAttributes = JSON.stringify([...new Set(input.roleAttributes ?? [])]);
    if (mode !== 'patch' || 'reportOnly' in input) out.reportOnly = input.reportOnly ? 1 : 0;
    return out;
  },
  cli: { columns: ['id', 'name', 'typeId', 'roleAttributes', 'reportOnly'] },
});
