// OAuth 2.0 / OIDC errors (RFC 6749 5.2): {error, error_description} with a status, as the token,
// introspection and revocation endpoints answer them; the authorize endpoint redirects them once the
// redirect URI is known to be allowed.
export class OidcError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }

  toJSON() {
    return { error: this.error, error_description: this.description };
  }
}

export const invalidGrant = (description: string) => new OidcError(400, 'invalid_grant', description);
export const invalidRequest = (description: string) => new OidcError(400, 'invalid_request', description);
export const invalidClient = (description = 'client not found') => new OidcError(401, 'invalid_client', description);
