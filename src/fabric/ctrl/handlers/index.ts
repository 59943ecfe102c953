// Which control-channel message goes to which handler (one file each, beside this one); the router's own
// tunneler's messages have theirs in ../tunnel/.
import type { Message } from '../../channel/codec.js';
import { CtrlType } from '../messages.js';
import { confirmCircuits } from './circuit-confirmation.js';
import { createCircuitV1 } from './create-circuit.js';
import { createCircuit } from './create-circuit-v2.js';
import { createCircuitV3 } from './create-circuit-v3.js';
import { createTerminatorV1 } from './create-terminator.js';
import { createTerminator } from './create-terminator-v2.js';
import { extendCerts } from './enrollment-extend.js';
import { verifyCerts } from './enrollment-extend-verify.js';
import { fault } from './fault.js';
import { metrics } from './metrics.js';
import { removeRequested } from './remove-terminators.js';
import { linksReported } from './router-links.js';
import type { CtrlRouter } from './router.js';
import { updateTerminator } from './update-terminator.js';
import { apiSessionHeartbeat } from './api-session-heartbeat.js';
import { clientResync } from './client-resync.js';
import { connectEvents } from './connect-events.js';
import { subscribeDataModel } from './subscribe-data-model.js';
import { updateRouterInterfaces } from './update-router-interfaces.js';
import { verifyRouter } from './verify-router.js';

/** A handler, and what it is for (the log line when it fails says so). */
export const CTRL_HANDLERS = new Map<number, [(r: CtrlRouter, m: Message) => unknown, string]>([
  [CtrlType.CreateTerminatorV2Request, [createTerminator, 'terminator']],
  [CtrlType.CreateCircuitV2Request, [createCircuit, 'circuit']],
  [CtrlType.CreateCircuitV3Request, [createCircuitV3, 'circuit']],
  [CtrlType.CreateTerminatorRequest, [createTerminatorV1, 'terminator']],
  [CtrlType.CreateCircuitRequest, [createCircuitV1, 'circuit']],
  [CtrlType.UpdateTerminatorRequest, [updateTerminator, 'terminator update']],
  [CtrlType.RemoveTerminatorsRequest, [removeRequested, 'terminator removal']],
  [CtrlType.Fault, [fault, 'fault']],
  [CtrlType.RouterLinks, [linksReported, 'link report']],
  [CtrlType.VerifyRouter, [verifyRouter, 'router verification']],
  [CtrlType.CircuitConfirmation, [confirmCircuits, 'circuit confirmation']],
  [CtrlType.Metrics, [metrics, 'metrics']],
  [CtrlType.EnrollmentExtendRouterRequest, [extendCerts, 'certificate renewal']],
  [CtrlType.EnrollmentExtendRouterVerifyRequest, [verifyCerts, 'certificate renewal']],
  [CtrlType.SubscribeToDataModelRequest, [subscribeDataModel, 'data model subscription']],
  [CtrlType.RequestClientReSync, [clientResync, 'resync']],
  [CtrlType.ApiSessionHeartbeat, [apiSessionHeartbeat, 'API session heartbeat']],
  [CtrlType.UpdateRouterInterfaces, [updateRouterInterfaces, 'interfaces update']],
  [CtrlType.ConnectEvents, [connectEvents, 'connect events']],
]);
