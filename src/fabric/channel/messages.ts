// The message catalogue of channel V2 as OpenZiti's SDKs and routers speak it: content types and header
// ids, one table read by the codec, the handlers and the test peers (../shared/reference/edge-protocol.md
// section 3, ctrl-channel-1.1.md section 1.2). Numbers are upstream's; names follow them.

export const ContentType = {
  Hello: 0,
  Ping: 1,
  Result: 2,
  Latency: 3,
  LatencyResponse: 4,
  Heartbeat: 5,
  // The SDK-facing edge range.
  Connect: 60783,
  StateConnected: 60784,
  StateClosed: 60785,
  Data: 60786,
  Dial: 60787,
  DialSuccess: 60788,
  DialFailed: 60789,
  Bind: 60790,
  Unbind: 60791,
  StateSessionEnded: 60792,
  Probe: 60793,
  UpdateBind: 60794,
  HealthEvent: 60795,
  TraceRoute: 60796,
  TraceRouteResponse: 60797,
  ConnInspectRequest: 60798,
  ConnInspectResponse: 60799,
  BindSuccess: 60800,
  /** A JWT API session's SDK hands its refreshed access token to the router (2.x numbering; replies 60801/60802). */
  UpdateTokenSuccess: 60801,
  UpdateTokenFailure: 60802,
  UpdateToken: 60803,
} as const;

export const Header = {
  ConnectionId: 0,
  ReplyFor: 1,
  ResultSuccess: 2,
  HelloVersion: 4,
  Heartbeat: 5,
  HeartbeatResponse: 6,
  /**
   * Grouped ("multi-underlay") channels of channel v4, OpenZiti 2.x (channel/grouped.ts): the underlay's
   * type (ctrl.default), whether a hello belongs to a group, the group's secret, whether it opens the
   * group, and the underlay a message came on. 10 to 12 mean other things in a 1.x router's hello
   * (ctrl/messages.ts CtrlHeader): a hello is read as grouped only when it says IsGrouped.
   */
  Type: 7,
  Id: 8,
  IsGrouped: 9,
  GroupSecret: 10,
  IsFirstGroupConnection: 11,
  UnderlayType: 12,
  /** Headers 128..255 of a request are copied onto its reply (the latency probe relies on it). */
  ReflectedFirst: 128,
  ReflectedLast: 255,
  UUID: 128,
  ConnId: 1000,
  Seq: 1001,
  SessionToken: 1002,
  PublicKey: 1003,
  Cost: 1004,
  Precedence: 1005,
  TerminatorIdentity: 1006,
  TerminatorIdentitySecret: 1007,
  CallerId: 1008,
  CryptoMethod: 1009,
  Flags: 1010,
  AppData: 1011,
  RouterProvidedConnId: 1012,
  HealthStatus: 1013,
  ErrorCode: 1014,
  TraceHopCount: 1016,
  TraceHopType: 1017,
  TraceHopId: 1018,
  ListenerId: 1021,
  ConnType: 1022,
  SupportsInspect: 1023,
  SupportsBindSuccess: 1024,
  ConnectionMarker: 1025,
  CircuitId: 1026,
  StickinessToken: 1027,
} as const;

/** Bit 1 of the Flags header: the sender will send no more data (half close). */
export const FLAG_FIN = 1;

/** Edge error codes (sdk-golang ziti/edge/messages.go). */
export const EdgeError = {
  Internal: 1,
  InvalidApiSession: 2,
  InvalidSession: 3,
  WrongSessionType: 4,
  InvalidEdgeRouterForSession: 5,
  InvalidService: 6,
  InvalidTerminator: 8,
  InvalidPrecedence: 9,
  InvalidCost: 10,
  EncryptionDataMissing: 11,
} as const;

/** ConnInspectResponse conn types. */
export const ConnType = { Invalid: 0, Dial: 1, Bind: 2, Unknown: 3 } as const;

export const NAMES: Record<number, string> = Object.fromEntries(Object.entries(ContentType).map(([k, v]) => [v, k]));
