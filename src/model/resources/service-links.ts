// The links upstream puts on a service, wherever it appears: its detail and every reference to it
// (an identity's service configs, a session's service, a terminator's, policy advice).

export function serviceLinks(id: string) {
  const nested = (path: string) => ({ href: `./services/${id}/${path}` });
  return {
    self: { href: `./services/${id}` },
    configs: nested('configs'),
    'service-edge-router-policies': nested('service-edge-router-policies'),
    'service-policies': nested('service-policies'),
    terminators: nested('terminators'),
  };
}

/** A reference to a service, with the service's links as upstream gives them. */
export const serviceRef = (id: string, name: string) => ({ _links: serviceLinks(id), entity: 'services', id, name });
