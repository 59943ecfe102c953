// Numbered migrations, kept in code (not scanned from disk) so they travel inside the single executable.
import type { Migration } from 'kysely';
import type { DialectHelpers } from '../dialect.js';
import { foundation } from './0001-foundation.js';
import { entityIndex } from './0002-entity-index.js';
import { pki } from './0003-pki.js';
import { auth } from './0004-auth.js';
import { configs } from './0005-configs.js';
import { servicesRoutersPolicies } from './0006-services-routers-policies.js';
import { sessionsPostureMaintenance } from './0007-sessions-posture-maintenance.js';
import { sessionTokens } from './0008-session-tokens.js';
import { integrityRunOwner } from './0009-integrity-run-owner.js';
import { upstreamConfigTypeIds } from './0010-upstream-config-type-ids.js';
import { dataPlane } from './0011-data-plane.js';
import { identityTypesDefault } from './0012-identity-types-default.js';
import { longUsernames } from './0013-long-usernames.js';
import { fabricState } from './0014-fabric-state.js';
import { identityPermissions } from './0020-identity-permissions.js';
import { apiTokens } from './0021-api-tokens.js';
import { auditEvents } from './0022-audit-events.js';
import { importJournal } from './0025-import-journal.js';
import { nameTrigrams } from './0026-name-trigrams.js';
import { importFinished } from './0027-import-finished.js';
import { nameStatistics } from './0028-name-statistics.js';
import { signerTargetToken } from './0029-signer-target-token.js';
import { revocations } from './0030-revocations.js';
import { authenticatorExtendRequests } from './0031-authenticator-extend-requests.js';
import { router2xFields } from './0033-router-2x-fields.js';
import { signerEnrollment } from './0034-signer-enrollment.js';
import { postureReportOnly } from './0035-posture-report-only.js';
import { terminatorSessions } from './0036-terminator-sessions.js';
import { sessionGrants } from './0037-session-grants.js';
import { oidc } from './0032-oidc.js';
import { secondaryExtJwt } from './0038-secondary-ext-jwt.js';
import { pkiRenewal } from './0039-pki-renewal.js';
import { caRouterEnrollment } from './0040-ca-router-enrollment.js';
import { caClaimAttributes } from './0041-ca-claim-attributes.js';
import { controllerCtrlAddress } from './0042-controller-ctrl-address.js';
import { configTypeTarget } from './0043-config-type-target.js';

export function migrations(dialect: DialectHelpers): Record<string, Migration> {
  return {
    '0001-foundation': foundation(dialect),
    '0002-entity-index': entityIndex(),
    '0003-pki': pki(),
    '0004-auth': auth(),
    '0005-configs': configs(),
    '0006-services-routers-policies': servicesRoutersPolicies(),
    '0007-sessions-posture-maintenance': sessionsPostureMaintenance(),
    '0008-session-tokens': sessionTokens(),
    '0009-integrity-run-owner': integrityRunOwner(),
    '0010-upstream-config-type-ids': upstreamConfigTypeIds(),
    '0011-data-plane': dataPlane(),
    '0012-identity-types-default': identityTypesDefault(),
    '0013-long-usernames': longUsernames(dialect),
    '0014-fabric-state': fabricState(),
    '0020-identity-permissions': identityPermissions(),
    '0021-api-tokens': apiTokens(),
    '0022-audit-events': auditEvents(),
    '0025-import-journal': importJournal(),
    '0026-name-trigrams': nameTrigrams(dialect),
    '0027-import-finished': importFinished(),
    '0028-name-statistics': nameStatistics(dialect),
    '0029-signer-target-token': signerTargetToken(),
    '0030-revocations': revocations(),
    '0031-authenticator-extend-requests': authenticatorExtendRequests(),
    '0032-oidc': oidc(),
    '0033-router-2x-fields': router2xFields(),
    '0034-signer-enrollment': signerEnrollment(),
    '0035-posture-report-only': postureReportOnly(),
    '0036-terminator-sessions': terminatorSessions(),
    '0037-session-grants': sessionGrants(),
    '0038-secondary-ext-jwt': secondaryExtJwt(),
    '0039-pki-renewal': pkiRenewal(),
    '0040-ca-router-enrollment': caRouterEnrollment(),
    '0041-ca-claim-attributes': caClaimAttributes(),
    '0042-controller-ctrl-address': controllerCtrlAddress(),
    '0043-config-type-target': configTypeTarget(),
  };
}
