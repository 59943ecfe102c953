// Field shapes shared by every resource (both APIs). TypeBox gives validation, OpenAPI and TS types at once.
import { Type, type TSchema } from 'typebox';

/** A JSON map whose values follow `value`; spelled with additionalProperties so OpenAPI 3 can show it. */
export const MapOf = (value: TSchema, opts: Record<string, unknown> = {}) =>
  Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: value, ...opts });

export const TagValue = Type.Union([Type.String(), Type.Boolean(), Type.Null()]);
export const Tags = Type.Unsafe<Record<string, string | boolean | null> | null>({
  type: ['object', 'null'],
  additionalProperties: TagValue,
  description: 'User-defined names mapped to a string, a boolean or null',
});
export const AnyMap = Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'], additionalProperties: true });

export const Attributes = Type.Unsafe<string[] | null>({
  type: ['array', 'null'],
  items: { type: 'string', minLength: 1, maxLength: 255 },
  maxItems: 1000,
  description: 'Role attributes that loosely couple this resource to policies',
});

export const Cost = Type.Integer({ minimum: 0, maximum: 65535 });
export const Precedence = Type.Union([Type.Literal('default'), Type.Literal('required'), Type.Literal('failed')]);
export const Username = Type.String({ minLength: 4, maxLength: 100 });
export const Password = Type.String({ minLength: 5, maxLength: 100 });
/**
 * Where the document sets no limit (authenticator create, identity and enrollment updb usernames):
 * the unique index on usernames holds at most about 2,700 bytes in PostgreSQL, so a username is kept
 * under that even in 4-byte characters; a password has the same bound so that every input is bounded.
 */
export const MAX_USERNAME_CHARS = 512;
export const FreeUsername = Type.String({ minLength: 1, maxLength: MAX_USERNAME_CHARS });
export const FreePassword = Type.String({ minLength: 1, maxLength: MAX_USERNAME_CHARS });
export const Name = Type.String({ minLength: 1, maxLength: 255 });
export const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);
export const DateTime = Type.String({ format: 'date-time' });

export const Link = Type.Object({ href: Type.String(), method: Type.Optional(Type.String()), comment: Type.Optional(Type.String()) });
export const Links = MapOf(Link);
export const EntityRef = Type.Object({
  _links: Type.Optional(Links),
  entity: Type.String(),
  id: Type.String(),
  name: Type.String(),
});

/** Fields every stored resource answers with. */
export const baseFields = {
  id: Type.String(),
  _links: Links,
  createdAt: DateTime,
  updatedAt: DateTime,
  tags: Tags,
};

export const Meta = Type.Object({
  apiVersion: Type.String(),
  apiEnrollmentVersion: Type.String(),
  filterableFields: Type.Optional(Type.Array(Type.String())),
  pagination: Type.Optional(Type.Object({ limit: Type.Integer(), offset: Type.Integer(), totalCount: Type.Integer() })),
});

export const Envelope = (data: TSchema) => Type.Object({ data, meta: Meta });
export const ListEnvelope = (item: TSchema) => Type.Object({ data: Type.Array(item), meta: Meta });
export const CreateLocation = Type.Object({ id: Type.String(), _links: Links });
export const Empty = Type.Object({});

export const ErrorBody = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    cause: Type.Optional(Type.Unsafe({})),
    causeMessage: Type.Optional(Type.String()),
    args: Type.Optional(Type.Object({ urlVars: MapOf(Type.String()) })),
    data: Type.Optional(Type.Unsafe({ type: 'object', additionalProperties: true })),
    requestId: Type.String(),
  }),
  meta: Meta,
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

export const ListQuery = Type.Object({
  limit: Type.Optional(Type.Integer()),
  offset: Type.Optional(Type.Integer()),
  filter: Type.Optional(Type.String({ maxLength: 4096 })),
});
