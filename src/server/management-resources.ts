// The declared resources the management API mounts as their standard routes (routes/management/index.ts,
// with no view and no scope: an admin sees every row). Here, apart from the routes, so the CLI's local
// reads (cli/local-read.ts) can answer them without loading the HTTP app.
import { apiSessions } from '../model/resources/api-sessions.js';
import { authPolicies } from '../model/resources/auth-policies.js';
import { authenticators } from '../model/resources/authenticators.js';
import { cas } from '../model/resources/cas.js';
import { configs, configTypes } from '../model/resources/configs.js';
import { enrollments } from '../model/resources/enrollments.js';
import { externalJwtSigners } from '../model/resources/external-jwt-signers.js';
import { identities } from '../model/resources/identities.js';
import { identityTypes } from '../model/resources/identity-types.js';
import { edgeRouterPolicies, serviceEdgeRouterPolicies, servicePolicies } from '../model/resources/policies.js';
import { postureCheckTypes } from '../model/resources/posture-check-types.js';
import { postureChecks } from '../model/resources/posture-checks.js';
import { revocations } from '../model/resources/revocations.js';
import { edgeRouters, routers, transitRouters } from '../model/resources/routers.js';

/** Every declared resource the management API serves. */
export const managementResources = [
  identities, identityTypes, authenticators, cas, enrollments, authPolicies, apiSessions, externalJwtSigners, configTypes, configs,
  edgeRouters, routers, transitRouters, edgeRouterPolicies, serviceEdgeRouterPolicies, servicePolicies, postureCheckTypes, postureChecks,
  revocations,
];
