// The links upstream puts on an identity, wherever it appears: its detail and every reference to it
// (an API session's identity, an authenticator's, an enrollment's). ZAC and generated clients follow them.

const nested = (id: string, path: string) => ({ href: `./identities/${id}/${path}` });

export function identityLinks(id: string, authPolicyId?: string | null) {
  return {
    self: { href: `./identities/${id}` },
    // As upstream's controller 1.1.10 answers them (read off its answers side by side with ztc's).
    'edge-router-policies': nested(id, 'edge-router-policies'),
    'edge-routers': nested(id, 'edge-routers'),
    'service-configs': nested(id, 'service-configs'),
    'service-policies': nested(id, 'service-policies'),
    services: nested(id, 'services'),
    'posture-data': nested(id, 'posture-data'),
    'failed-service-requests': nested(id, 'failed-service-requests'),
    authenticators: nested(id, 'authenticators'),
    enrollments: nested(id, 'enrollments'),
    ...(authPolicyId ? { 'auth-policies': { href: `./auth-policies/${authPolicyId}` } } : {}),
  };
}

/** A reference to an identity, with the identity's links as upstream gives them. */
export const identityRef = (id: string, name: string, authPolicyId?: string | null) => ({
  _links: identityLinks(id, authPolicyId),
  entity: 'identities',
  id,
  name,
});
