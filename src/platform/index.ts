/**
 * The composition root: builds every subsystem from the resolved config and wires them
 * together. `roost up` (and so `npm start`) calls `startPlatform`; tests start it in-process or
 * as a child process. The only module allowed to know about all the others.
 */
import http2 from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { createAdaptorServer, type ServerType } from "@hono/node-server";
import * as restate from "@restatedev/restate-sdk";
import {
  createApi,
  createFilesClient,
  createLiveView,
  createPortPreviews,
  createPreviewSigner,
  loadPreviewSecret,
} from "../api/index.ts";
import { hashToken } from "../auth/index.ts";
import {
  createComputerObject,
  createComputerHost,
  createComputerHostService,
  hostServicePath,
  createControlPlaneClient,
  forwarderPorts,
  isolationOf,
  type ComputerProvider,
  type HostReport,
} from "../computers/index.ts";
import type { RoostConfig } from "../config/index.ts";
import {
  connectExternalRestate,
  probeRestateHealth,
  registerDeployment,
  startEmbeddedRestate,
  type RestateEngine,
  ensureRequestIdentity,
} from "../engine/index.ts";
import { createLocalBlobStore, createS3BlobStore, type BlobStore } from "../blobs/index.ts";
import { compilePolicy, createDestinationContext, parseEgressPolicy } from "../egress/index.ts";
import {
  createGuardedFetch,
  createHttpMcpClients,
  createMcpService,
  createMcpTools,
  type GuardedFetchOptions,
  mcpOAuthCallbackPath,
} from "../mcp/index.ts";
import { connectPostgresRelay, createEventHub, type EventHub } from "../events/index.ts";
import { createSnapshotter } from "../snapshots/index.ts";
import {
  createForwardingGateway,
  createGateway,
  startNodeEndpoint,
  type GatewayEvent,
} from "../gateway/index.ts";
import { createConversationObject, createTitleHook, createTurnInterrupts } from "../loop/index.ts";
import { createModelResolver, createProviderSettings, type ModelClient } from "../models/index.ts";
import { openStore, type Store } from "../store/index.ts";
import {
  createRequestSecretTool,
  createBrokeredSecrets,
  createSecretCipher,
  createSecretRedaction,
  createSecretsService,
  loadSecretsKey,
} from "../secrets/index.ts";
import {
  createComputerTools,
  createHandoffTool,
  createToolRouter,
  handBackScreen,
  handedBackNotice,
  recordScreenNotice,
  type ToolSource,
} from "../tools/index.ts";
import { createConsentHooks } from "../teams/index.ts";
import {
  createLexicalRanker,
  createMemoryPassObject,
  createMemorySection,
  createMemoryService,
  createMemoryTools,
  memoryPassObjectName,
  type MemoryPassRequest,
} from "../memory/index.ts";
import {
  createSkillService,
  createSkillsSection,
  createSkillSync,
  createSkillSyncHook,
  createSkillTools,
} from "../skills/index.ts";
import {
  createEscalateTool,
  createPriceTable,
  createUsageService,
  type RoutineLookup,
  type UsageService,
} from "../usage/index.ts";
import { createWebHandler } from "../web/index.ts";
import { createWebToolSource, type WebToolsWiring } from "./web-tools.ts";
import { withConversationAttachments } from "./attachments.ts";
import { createLoopUploads } from "./uploads.ts";
import {
  createRoutineLookup,
  createRoutineObject,
  createRoutineService,
  createRunSettler,
  createSchedulerClient,
  defaultRoutineSettings,
  type RoutineSettings,
} from "../routines/index.ts";
import { createApprovals, type ApprovalsService } from "../policy/index.ts";
import { ensureLocalAdmin } from "./admin.ts";
import { resolveNodeId } from "./node-id.ts";
import { secureDataDir } from "./data-dir.ts";
import { createKicker, lazyIngress } from "./kicker.ts";
import { createResults, type ResultsOptions } from "./results.ts";
import { createSlackWiring } from "./slack.ts";
import { createHelpers } from "../helpers/index.ts";
import type { Notifier } from "../notifications/index.ts";
import { createLogger, registerLogRedaction, type Logger } from "../log/index.ts";
import { startComputerRuntime, type ComputerRuntime } from "./provider-selection.ts";

export {
  parseBalancerNodes,
  startServiceBalancer,
  type BalancedNode,
  type ServiceBalancer,
  type ServiceBalancerOptions,
} from "./service-balancer.ts";

const defaultEgressPolicy = parseEgressPolicy({ mode: "defaults-and-allowlist", allow: [] });

export interface PlatformOptions {
  /** @default a JSON logger on stderr */
  logger?: Logger;
  /** Replace model resolution (tests script the model here). */
  resolveModel?: (spec: string | null) => ModelClient;
  /** Replace the tool sources (tests); by default the computer's tools. */
  toolSources?: ToolSource[];
  /** Replace the computer provider (tests). */
  provider?: ComputerProvider;
  /** How often waiting messages are re-kicked. @default 5000 */
  sweepIntervalMs?: number;
  /** The host as `roost up` prepared it (computers/host-setup.ts); probed again when absent. */
  host?: HostReport;
  /** Also told what routines and budgets notify the owner of (tests record it). @default none */
  notifier?: Notifier;
  /** A routine's owner, budget and triage model. @default the routines in the store */
  routineLookup?: RoutineLookup;
  /** Drafts' channels and the owner's webhooks (tests route webhooks to 127.0.0.1). */
  results?: ResultsOptions;
  /** web_fetch's name resolution and connections (tests route them to test hosts). */
  webFetch?: WebToolsWiring["fetcher"];
  /**
   * How HTTP MCP servers' names are resolved and connected to (tests point a public-looking name
   * at 127.0.0.1, as for the owner's webhooks; the egress checks still run). @default DNS and TCP
   */
  mcpFetch?: Pick<GuardedFetchOptions, "resolve" | "connect">;
  /**
   * `computer-host` (`roost computer-host`, decision 0041): run computers only (store, provider,
   * egress proxy, gateway, node endpoint, host service) and none of the public API, the web app
   * or the loop's services. @default "api"
   */
  role?: "api" | "computer-host";
}

export interface Platform {
  readonly url: string;
  readonly port: number;
  readonly adminTokenFile: string;
  readonly store: Store;
  readonly events: EventHub;
  readonly engine: RestateEngine;
  readonly provider: ComputerProvider;
  /** Tells account owners things (notifications/): the routines and budget modules take it. */
  readonly notifier: Notifier;
  /** Usage records and budgets; also the `RunUsage` the routines module reads runs' cost from. */
  readonly usage: UsageService;
  /** Tool policies and approvals (docs/approvals.md). */
  readonly approvals: ApprovalsService;
  close(): Promise<void>;
}

export async function startPlatform(
  config: RoostConfig,
  options: PlatformOptions = {},
): Promise<Platform> {
  const logger = options.logger ?? createLogger();
  // Subsystems that take a plain line function log through this, as info.
  const log = (message: string) => logger.info(message.replace(/^roost: /, ""));
  const cleanups: (() => Promise<void>)[] = [];
  /** Set when shutdown starts: health answers 503 so load balancers stop sending work. */
  let draining = false;
  const closeAll = async () => {
    draining = true;
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: unknown) => logger.warn("close failed", { error }));
    }
  };

  const role = options.role ?? "api";
  checkRole(config, role);
  try {
    await secureDataDir(config);
    const store = await openStore(config.store);
    cleanups.push(() => store.close());
    // One HTTP server for the API and the gateway; it starts listening once everything is wired.
    const started: { engine?: RestateEngine } = {};
    const ingressUrl = () => {
      if (started.engine === undefined) throw new Error("the durable engine is not running yet");
      return started.engine.ingressUrl;
    };
    // `env` carries the socket: the web app's local sign-in checks that the caller is on loopback.
    let fetchApi: (request: Request, env?: unknown) => Response | Promise<Response> = () =>
      new Response("starting", { status: 503 });
    const server: ServerType = createAdaptorServer({
      fetch: (request, env) => fetchApi(request, env),
    });
    const events = createEventHub();
    // Node-to-node forwarding (decision 0039): record which node holds each worker, in order.
    let locationWrites = Promise.resolve();
    const recordLocation = (event: GatewayEvent) => {
      const node = config.forwarding;
      if (node === undefined) return;
      if (event.type !== "connected" && event.type !== "disconnected") return;
      locationWrites = locationWrites
        .then(async () => {
          if (event.type === "connected")
            await store.setWorkerLocation({
              computerId: event.computerId,
              nodeUrl: node.url,
              workerId: event.worker.workerId,
              connectedAt: event.worker.connectedAt,
            });
          // A replaced connection's disconnect comes after its successor's hello: keep that one.
          else if (!localGateway.isConnected(event.computerId))
            await store.clearWorkerLocation(event.computerId, node.url);
        })
        .catch((error: unknown) =>
          logger.warn("could not record where a computer's worker is connected", {
            computerId: event.computerId,
            error: String(error),
          }),
        );
    };
    const localGateway = createGateway({
      server: server as unknown as import("node:http").Server,
      verifyToken: async (token) => {
        const tokenHash = hashToken(token);
        const computerId = await store.findComputerByWorkerToken(tokenHash, Date.now());
        if (computerId !== undefined) {
          // G8: a local computer's worker connects through its own socket, never over TCP.
          const computer = await store.getComputer(computerId);
          // STORE9 clears a hosted token when the computer becomes self-hosted; this is the backstop.
          if (computer?.kind === "self-hosted") return undefined;
          return { computerId, boundToSocket: computer?.provider === "local" };
        }
        // A self-hosted machine dials over TCP from wherever it is; its token serves its own computer only (G1).
        const selfHosted = await store.findSelfHostedComputer(tokenHash);
        return selfHosted === undefined ? undefined : { computerId: selfHosted };
      },
      workerWaitMs: config.computers.wakeTimeoutMs,
      tunnels: {
        maxTunnelsPerComputer: config.previews.maxConnectionsPerComputer,
        idleTimeoutMs: config.previews.idleTimeoutMs,
      },
      logger,
      // A self-hosted machine's state is its connection (C7): tell its owner's clients when it changes.
      onEvent: (event) => {
        recordLocation(event);
        if (event.type !== "connected" && event.type !== "disconnected") return;
        const state = event.type;
        void store
          .getComputer(event.computerId)
          .then((computer) => {
            if (computer?.kind !== "self-hosted") return;
            events.publishAccount({
              type: "computer",
              accountId: computer.accountId,
              computerId: computer.id,
              state,
            });
          })
          .catch(() => undefined); // a hint only; clients poll as well
      },
    });

    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => resolve());
    });
    cleanups.push(() => closeHttp(server));
    // Closed before the HTTP server (cleanups run in reverse): its upgraded sockets hold server.close().
    cleanups.push(() => localGateway.close());
    const gateway =
      config.forwarding === undefined
        ? localGateway
        : createForwardingGateway(localGateway, {
            selfUrl: config.forwarding.url,
            secret: config.forwarding.secret,
            locations: store,
            workerWaitMs: config.computers.wakeTimeoutMs,
            logger,
          });
    if (config.forwarding !== undefined) {
      const node = config.forwarding;
      // NF1: the node secret never reaches a log line, even quoted in an error.
      const unregisterNodeSecret = registerLogRedaction((text) =>
        text.replaceAll(node.secret, "[node secret]"),
      );
      cleanups.push(async () => unregisterNodeSecret());
      // No worker is connected here yet: whatever a crashed run of this node left is stale.
      await store.clearNodeWorkerLocations(node.url);
      const nodeEndpoint = await startNodeEndpoint({
        gateway: localGateway,
        secret: node.secret,
        host: node.host,
        port: node.port,
        logger,
      });
      cleanups.push(() => nodeEndpoint.close());
      cleanups.push(async () => {
        await locationWrites;
        await store.clearNodeWorkerLocations(node.url).catch(() => undefined);
      });
    }
    const port = (server.address() as AddressInfo).port;
    const url = `http://${config.host}:${port}`;
    const gatewayUrl =
      config.computers.gatewayUrl ??
      `ws://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${port}/v1/gateway`;

    // Secrets per bot and per user: sealed in the store, injected into shell processes, redacted
    // from every result (docs/secrets.md).
    const cipher = createSecretCipher(
      await loadSecretsKey({ dataDir: config.dataDir, key: config.secrets.key }),
    );
    const secrets = createSecretsService({ store, cipher });
    const unregisterLogRedaction = registerLogRedaction((text) => secrets.redactLoaded(text)); // LOG3
    cleanups.push(async () => unregisterLogRedaction());
    // Roost's own ports, which no computer may reach through the egress proxy (P3).
    const platformPorts = new Set<number>([port, ...restatePorts(config), ...storePorts(config)]);
    const runtime: ComputerRuntime =
      options.provider === undefined
        ? await startComputerRuntime(config, store, {
            logger,
            gateway: localGateway, // a local computer's socket is this node's
            // The vault (decision 0024): the computer's account's brokered secrets, read at each
            // request so a deleted secret is never swapped in again.
            brokeredSecrets: createBrokeredSecrets({ store, secrets }),
            redact: (text) => secrets.redactLoaded(text),
            platformPorts: () => platformPorts,
            ...(options.host === undefined ? {} : { host: options.host }),
          })
        : {
            provider: options.provider,
            egress: undefined,
            parseUserPolicy: (input) => parseEgressPolicy(input),
            applyPolicy: async () => undefined,
            close: () => options.provider!.close(),
          };
    cleanups.push(() => runtime.close());
    const provider = runtime.provider;

    const blobs = openBlobStore(config);
    cleanups.push(() => blobs.close());
    const snapshotter = createSnapshotter({
      blobs,
      keep: config.computers.snapshotKeep,
      compressionLevel: config.computers.snapshotCompressionLevel,
      exclude: ["tmp"],
      log,
    });
    if (config.store.kind === "postgres") {
      // Several nodes may share this store: carry live events between them.
      const relay = await connectPostgresRelay({ url: config.store.url, hub: events, log });
      cleanups.push(() => relay.close());
    }

    // Settings → Models: stored providers merged under the environment's (models/ MPS1), reread
    // now and then so another node's change reaches new turns here too (MPS3).
    const providerSettings = createProviderSettings({
      store,
      cipher,
      environment: config.models,
    });
    await providerSettings.load();
    const providerReload = setInterval(() => {
      providerSettings
        .load()
        .catch((error: unknown) => logger.warn("could not reread model providers", { error }));
    }, 30_000);
    providerReload.unref();
    cleanups.push(async () => clearInterval(providerReload));
    const models = createModelResolver(() => providerSettings.config(), {
      retry: { maxAttempts: config.modelAttempts },
    });
    const resolveModel = options.resolveModel ?? ((spec: string | null) => models.resolve(spec));

    const ingress = lazyIngress(ingressUrl);
    const kicker = createKicker(ingress, store, events, logger.child({ component: "kicker" }));
    const controlPlane = createControlPlaneClient(ingress);
    // Slack as a channel: links, the Events API in, each turn shown in its thread (docs/slack.md).
    const slack = createSlackWiring({
      store,
      events,
      kicker,
      cipher,
      logger: logger.child({ component: "slack" }),
      baseUrl: () => config.publicUrl ?? url,
      insecureApiUrl: config.slackInsecureApiUrl,
    });
    // Results: bot-to-bot messages, no_reply, drafts, notifications (docs/results.md).
    const results = createResults(
      config,
      { store, events, ingress, kicker, platformPorts: () => platformPorts, logger },
      options.results,
    );
    // Slack's draft cards send through the results' draft sender (slack/ SLK24).
    slack.useDraftSender(async (request, attempt) => {
      const result = await results.api.drafts.send(request, attempt);
      return result.ok ? { ok: true } : { ok: false, message: result.message };
    });
    // Routines: a scheduler object per routine in Restate; runs are delivered messages.
    const extraNotifier = options.notifier;
    const notifier: Notifier =
      extraNotifier === undefined
        ? results.notifier
        : {
            notify: async (notification) => {
              await results.notifier.notify(notification);
              await extraNotifier.notify(notification);
            },
          };
    // Usage per model call and the spend caps checked before each one (docs/usage.md).
    const usage = createUsageService({
      store,
      events,
      notifier,
      routines: options.routineLookup ?? createRoutineLookup(store),
      prices: createPriceTable(config.prices),
      defaultSpec: () => models.defaultSpec,
      release: (waiterId, answer) => kicker.wake(waiterId, answer),
      logger: logger.child({ component: "usage" }),
    });
    const routineSettings: RoutineSettings = {
      ...defaultRoutineSettings,
      ...config.routines,
      defaultTimezone: config.timezone,
    };
    const routines = createRoutineService({
      store,
      scheduler: createSchedulerClient(ingress),
      settings: routineSettings,
      runUsage: usage,
      logger,
    });
    slack.useRoutines(routines); // listener routines on Slack messages
    // What bots remember: the memory tool, the prompt's memory section, the post-turn pass.
    const memory = createMemoryService(store);
    const ranker = createLexicalRanker(store);
    // The user's skills: the skill tool, the prompt's index, and the copy to ~/skills before a
    // turn's first computer call.
    const skills = createSkillService(store);
    const skillsLogger = logger.child({ component: "skills" });
    const syncSkills = createSkillSyncHook({
      sync: createSkillSync({ store, worker: gateway, logger: skillsLogger }),
      store,
      logger: skillsLogger,
    });
    // Tool policy, approvals and the review model (docs/approvals.md): the router's TOOL2 hooks.
    const secretRedaction = createSecretRedaction(secrets);
    const approvals = createApprovals({
      store,
      redact: secretRedaction.redact, // REV2: what the reviewer sees and the card shows
      events,
      notifier: slack.withCards(notifier), // approval and consent cards in Slack threads
      release: (waiterId, value) => kicker.wake(waiterId, value),
      resolveModel: (spec) => resolveModel(spec),
      checkModel: (spec) => {
        models.resolve(spec);
      },
      timeoutMs: config.approvalTimeoutMs,
      logger: logger.child({ component: "approvals" }),
    });
    slack.useApprovals(approvals);
    // MCP servers (docs/mcp.md): command servers on the computer, HTTP servers from here, through
    // a fetch that obeys the account's egress policy (MCPF1).
    const mcpHttp = createHttpMcpClients();
    cleanups.push(() => mcpHttp.close());
    const mcpDestination = createDestinationContext({
      allowPrivate: config.egress.allowPrivate,
      platformPorts: () => platformPorts,
    });
    const mcpFetchFor = (accountId: string) =>
      createGuardedFetch({
        policy: async () => {
          const computer = await store.ensureComputer(accountId, provider.kind);
          const stored = await store.getNetworkPolicy(computer.id);
          return compilePolicy(stored === null ? defaultEgressPolicy : parseEgressPolicy(stored));
        },
        destination: mcpDestination,
        ...options.mcpFetch,
      });
    const mcpOAuthRedirectUrl = `${config.publicUrl ?? url}${mcpOAuthCallbackPath}`;
    const mcp = createMcpService({
      store,
      cipher,
      onChange: (key) => mcpHttp.forget(`${key.scope}:${key.ownerId}:${key.name}:`),
      oauth: { redirectUrl: mcpOAuthRedirectUrl, fetchFor: mcpFetchFor },
    });
    const mcpTools = createMcpTools({
      store,
      cipher,
      secrets,
      gateway,
      providerKind: provider.kind,
      http: mcpHttp,
      fetchFor: mcpFetchFor,
      oauthRedirectUrl: mcpOAuthRedirectUrl,
    });
    // Helpers: sub-agents as conversations of their own (docs/helpers.md).
    const helpers = createHelpers({
      store,
      events,
      deliver: (message) => kicker.deliver(message),
      settings: config.helpers,
      checkModel: (spec) => {
        models.resolve(spec);
      },
    });
    const routed = createToolRouter({
      // A teammate's secret in a shared place waits for their consent card first (teams/ CONS1).
      ...createConsentHooks({ store, policy: approvals.policy, ask: approvals.ask }),
      ...secretRedaction,
      sources: [
        ...(options.toolSources ?? [
          createComputerTools({
            store,
            gateway,
            events,
            providerKind: provider.kind,
            prepare: syncSkills,
            secrets,
            onPersonOnScreen: (context, computerId) =>
              recordScreenNotice(store, {
                callId: context.callId,
                accountId: context.accountId,
                botId: context.botId,
                conversationId: context.conversationId,
                computerId,
              }),
          }),
        ]),
        mcpTools,
        createRequestSecretTool({ store, secrets, notifier }),
        createHandoffTool({
          store,
          notifier,
          gateway,
          computerOf: async (accountId) =>
            (await store.ensureComputer(accountId, provider.kind)).id,
        }),
        createMemoryTools(memory, store),
        createSkillTools({ store, skills }),
        ...results.tools,
        slack.tools,
        helpers.tools,
        createEscalateTool(usage),
        createWebToolSource(config, {
          store,
          gateway,
          providerKind: provider.kind,
          platformPorts: () => platformPorts,
          logger: logger.child({ component: "web-tools" }),
          ...(options.webFetch === undefined ? {} : { fetcher: options.webFetch }),
        }),
      ],
    });
    // Screenshots, downloads and recordings of tool calls become the conversation's attachments.
    const tools = helpers.wrapRouter(
      withConversationAttachments(routed, {
        store,
        blobs,
        gateway,
        providerKind: provider.kind,
      }),
    );
    // The owner's interrupts reach the node running the turn through the events (and the relay).
    const interrupts = createTurnInterrupts();
    const unsubscribeInterrupts = events.subscribeAll((event) => {
      if (event.type === "interrupt") interrupts.request(event.conversationId, event.requestedAt);
    });
    cleanups.push(async () => unsubscribeInterrupts());

    // The durable objects' service endpoint, called by Restate.
    const conversationObject = createConversationObject({
      store,
      events,
      resolveModel,
      tools,
      followUpWindowMs: config.followUpWindowMs,
      interrupts,
      timezone: config.timezone,
      computerKind: async (accountId) =>
        (await store.ensureComputer(accountId, provider.kind)).kind,
      // Uploads attached to messages, copied into the computer (docs/uploads.md).
      uploads: createLoopUploads({
        store,
        blobs,
        gateway,
        providerKind: provider.kind,
        wake: (computerId, accountId) => controlPlane.wake(computerId, accountId),
      }),
      promptSections: [
        createSkillsSection({ store, skills }),
        createMemorySection({ store, ranker }),
        helpers.promptSection,
      ],
      compaction: config.compaction,
      beforeModelCall: [
        helpers.beforeModelCall,
        (durable, call) => usage.beforeModelCall(durable, call),
        slack.hooks.beforeModelCall,
      ],
      afterModelCall: [(durable, call) => usage.afterModelCall(durable, call)],
      // Compaction's first step: the memory pass over the part about to be summarised, awaited.
      beforeCompaction: async (durable, range) => {
        await durable.call(
          { object: memoryPassObjectName, key: range.conversationId, handler: "afterTurn" },
          range satisfies MemoryPassRequest,
        );
      },
      afterIdle: config.memoryPass
        ? [
            (durable, turns) =>
              durable.send(
                { object: memoryPassObjectName, key: turns.conversationId, handler: "afterTurn" },
                turns satisfies MemoryPassRequest,
              ),
          ]
        : [],
      afterTurn: [
        createRunSettler(store),
        results.afterTurn,
        helpers.afterTurn,
        ...(config.modelTitles ? [createTitleHook({ store, events, resolveModel })] : []),
        ...slack.hooks.afterTurn,
      ],
      logger: logger.child({ component: "loop" }),
    });
    // C9: this node as a computer host (decision 0040).
    const nodeId = await resolveNodeId(config.node.id, config.dataDir);
    const restoreIfNeeded = async (
      computerId: string,
      paths: { root: string },
      { atLeastGeneration }: { atLeastGeneration: number | null },
    ) => {
      if (atLeastGeneration !== null) {
        const latest = (await snapshotter.latest(computerId))?.generation;
        if (latest === undefined || latest < atLeastGeneration) {
          throw new Error(
            `computer ${computerId}: its last sleep saved snapshot generation ${atLeastGeneration}, but this node's blob store has ${latest === undefined ? "none" : `only generation ${latest}`}; ` +
              `every node must share one blob store (ROOST_BLOB_STORE=s3, or one shared ROOST_BLOB_DIR)`,
          );
        }
      }
      if (await snapshotter.needsRestore(computerId, paths.root)) {
        const restored = await snapshotter.restore(computerId, paths.root);
        log(
          `roost: computer ${computerId}: restored snapshot generation ${restored.generation} in ${restored.durationMs} ms`,
        );
      }
    };
    // The worker reads it (screens.ts); the providers pass it to the worker, not to user processes.
    const computerEnv = () => ({ ROOST_SCREENS_MAX: String(config.computers.screensMax) });
    const computerHost = createComputerHost({
      nodeId,
      provider,
      store,
      gateway,
      snapshots: { save: (computerId, paths) => snapshotter.snapshot(computerId, paths.root) },
      // HOME4: an API node with ROOST_COMPUTERS=remote runs nothing, so it wakes nothing here.
      ...(config.node.computers === "remote"
        ? {}
        : {
            waking: {
              store,
              restoreIfNeeded,
              waitForWorker: (computerId, timeoutMs) =>
                localGateway.waitForWorker(computerId, timeoutMs),
              gatewayUrl,
              computerEnv,
              wakeTimeoutMs: config.computers.wakeTimeoutMs,
              workerTokenTtlMs: config.computers.workerTokenTtlMs,
            },
          }),
    });
    const computerObject = createComputerObject({
      provider,
      store,
      events,
      gateway,
      gatewayUrl,
      host: computerHost,
      homeTimeoutMs: config.node.homeTimeoutMs,
      // C10: beside computer hosts this node never runs a computer itself.
      ...(config.node.computers === "remote" ? { remoteHosts: config.node.computerHosts } : {}),
      snapshots: { restoreIfNeeded },
      computerEnv,
      idleSleepMs: config.computers.idleSleepMs,
      wakeTimeoutMs: config.computers.wakeTimeoutMs,
      workerTokenTtlMs: config.computers.workerTokenTtlMs,
      holdLeaseMs: 30 * 60_000,
      logger,
    });
    // RI1: the embedded engine signs its requests and the endpoint accepts only its key; an
    // external one's keys come from the configuration.
    const identity =
      config.restate.mode === "embedded" ? await ensureRequestIdentity(config.dataDir) : undefined;
    const identityKeys =
      identity !== undefined
        ? [identity.publicKey]
        : config.restate.mode === "external"
          ? config.restate.identityKeys
          : [];
    // HOME3: the host service is a deployment of its own, at this node's URL + /host.
    const hostEndpoint = restate.createEndpointHandler({
      ...(identityKeys.length > 0 ? { identityKeys } : {}),
      services: [createComputerHostService(computerHost)],
      logger: () => undefined,
    });
    const mainEndpoint = restate.createEndpointHandler({
      ...(identityKeys.length > 0 ? { identityKeys } : {}),
      services: [
        conversationObject,
        computerObject,
        createRoutineObject({
          store,
          deliver: (message) => kicker.deliver(message),
          keepRuns: routineSettings.keepRuns,
          notifier,
          settings: routineSettings,
        }),
        createMemoryPassObject({
          store,
          memory,
          ranker,
          resolveModel,
          logger: logger.child({ component: "memory" }),
        }),
        ...results.objects,
      ],
      logger: () => undefined,
    });
    const serviceServer = http2.createServer((request, response) => {
      const path = request.url ?? "";
      if (path === hostServicePath || path.startsWith(`${hostServicePath}/`))
        hostEndpoint(request, response);
      // A computer host serves only its host service: no loop ever runs on it.
      else if (role === "computer-host") {
        response.writeHead(404, { "content-type": "text/plain" });
        response.end(`this is a computer host: only ${hostServicePath} is served here\n`);
      } else mainEndpoint(request, response);
    });
    await new Promise<void>((resolve, reject) => {
      serviceServer.once("error", reject);
      serviceServer.listen(config.servicePort, config.serviceHost, resolve);
    });
    const serviceConnections = trackConnections(serviceServer);
    cleanups.push(() => closeHttp2(serviceServer, serviceConnections, config.shutdownGraceMs));
    const servicePort = (serviceServer.address() as AddressInfo).port;
    platformPorts.add(servicePort);
    const serviceUrl =
      config.servicePort === 0 ? `http://127.0.0.1:${servicePort}` : config.serviceUrl;

    const engine =
      config.restate.mode === "embedded"
        ? await startEmbeddedRestate({
            dataDir: config.dataDir,
            ingressPort: config.restate.ingressPort,
            adminPort: config.restate.adminPort,
            nodePort: config.restate.nodePort,
            requestIdentityPemFile: identity?.privateKeyPemFile,
            onEvent: (event) => {
              if (event.type === "exited" && !event.expected)
                logger.warn("restate-server exited; restarting", {
                  signal: event.signal,
                  code: event.code,
                });
              if (event.type === "orphan-terminated")
                log(
                  `roost: stopped a restate-server left over from an earlier run (pid ${event.pid})`,
                );
            },
          })
        : await connectExternalRestate({
            ingressUrl: config.restate.ingressUrl,
            adminUrl: config.restate.adminUrl,
          });
    started.engine = engine;
    cleanups.push(() => engine.close());
    // A computer host registers only its host service: Restate never runs a loop there.
    if (role === "api") await registerDeployment(engine.adminUrl, serviceUrl, { force: true });
    // HOME3: after the main deployment, so this node's URL never becomes the loop runner's by it.
    // This node's OWN address, never ROOST_SERVICE_URL: in scale mode that is a load balancer
    // reaching every node, and another node would answer (and replace) this node's host service.
    const hostServiceUrl = `${ownServiceUrl(config.node.serviceUrl, config.serviceHost, servicePort)}${hostServicePath}`;
    try {
      await registerDeployment(engine.adminUrl, hostServiceUrl, { force: true });
    } catch (error) {
      if (config.node.serviceUrl !== undefined || role === "computer-host") throw error;
      // One node needs no host service (a computer homed here is stopped locally); more do.
      logger.warn(
        "Restate could not reach this node's host service at its own address: other nodes cannot stop or check computers homed here; set ROOST_NODE_SERVICE_URL to the URL at which Restate reaches this node's service port",
        { url: hostServiceUrl, error: String(error) },
      );
    }

    const health = async (): Promise<{ ok: boolean; checks: Record<string, string> }> => {
      if (draining) return { ok: false, checks: { node: "shutting down" } };
      const checks: Record<string, string> = {};
      try {
        await store.listBots("health-check");
        checks.store = "ok";
      } catch (error) {
        checks.store = `failing: ${(error as Error).message}`;
      }
      const probe = await probeRestateHealth(engine, AbortSignal.timeout(2000)).catch(
        (error: unknown) => ({
          healthy: false,
          problem: String(error),
        }),
      );
      checks.engine = probe.healthy ? "ok" : `failing: ${probe.problem ?? "unhealthy"}`;
      return { ok: Object.values(checks).every((value) => value === "ok"), checks };
    };

    if (role === "computer-host") {
      // Decision 0041: the gateway (its own upgrade handler) and /v1/health, nothing else.
      fetchApi = async (request) => {
        if (new URL(request.url).pathname === "/v1/health") {
          const answer = await health();
          return Response.json(answer, { status: answer.ok ? 200 : 503 });
        }
        return Response.json(
          {
            error: {
              code: "not_found",
              message:
                "this is a computer host (roost computer-host): it serves no public API; send API requests to an API node",
            },
          },
          { status: 404 },
        );
      };
      return {
        url,
        port,
        adminTokenFile: "",
        store,
        events,
        engine,
        provider,
        notifier: results.notifier,
        usage,
        approvals,
        close: closeAll,
      };
    }

    const admin = await ensureLocalAdmin(store, config.dataDir);

    // Port previews: tunnels through each computer's worker (decision 0016).
    const ports = createPortPreviews(
      {
        computerOf: async (accountId) => (await store.ensureComputer(accountId, provider.kind)).id,
        ownerOf: async (computerId) => (await store.getComputer(computerId))?.accountId,
        state: async (computerId) => (await controlPlane.status(computerId)).state,
        touch: async (computerId, accountId) => {
          await controlPlane.ensureAwake(computerId, { accountId, allowWake: false });
        },
        gateway,
        signer: createPreviewSigner(await loadPreviewSecret(config.dataDir)),
        reservedPorts: () => reservedPreviewPorts(provider.kind, platformPorts),
        previewBaseUrl: config.previews.url,
        linkTtlMs: config.previews.linkTtlMs,
        sessionTtlMs: config.previews.sessionTtlMs,
      },
      store,
      { logger },
    );
    (server as unknown as import("node:http").Server).on("upgrade", (request, socket, head) =>
      ports.handleUpgrade(request, socket, head),
    );
    // The live view: each bot's screen over a tunnel like a preview (decision 0026).
    const liveView = createLiveView(
      {
        computerOf: async (accountId) => (await store.ensureComputer(accountId, provider.kind)).id,
        state: async (computerId) => (await controlPlane.status(computerId)).state,
        touch: async (computerId, accountId) => {
          await controlPlane.ensureAwake(computerId, { accountId, allowWake: false });
        },
        gateway,
        reservedPorts: () => reservedPreviewPorts(provider.kind, platformPorts),
        handBack: (computerId, screenId) =>
          handBackScreen(
            store,
            (waiterId, value) => kicker.wake(waiterId, value),
            computerId,
            screenId,
            async (notice) => {
              // HOF4: the bot that was refused its screen hears it is free again, in the name of
              // the conversation's own account (as a routine's message is its owner's).
              const conversation = await store.getConversation(notice.conversationId);
              if (conversation === undefined) return; // deleted meanwhile
              await kicker.deliver({
                conversationId: notice.conversationId,
                clientMessageId: `handback:${notice.id}`,
                authorAccountId: conversation.accountId,
                text: handedBackNotice,
                source: { kind: "screen", screenId },
              });
            },
          ),
        ticketSecret: await loadPreviewSecret(config.dataDir),
      },
      store,
      { logger },
    );
    cleanups.push(() => liveView.close());
    (server as unknown as import("node:http").Server).on("upgrade", (request, socket, head) =>
      liveView.handleUpgrade(request, socket, head),
    );

    const api = createApi({
      ...(config.publicUrl === undefined ? {} : { publicUrl: config.publicUrl }), // invitation links
      attachments: { blobs },
      memory,
      skills,
      usage,
      approvals,
      secrets,
      mcp,
      slack: slack.api,
      store,
      events,
      kick: (conversationId, messageId, waiter) => kicker.kick(conversationId, messageId, waiter),
      interrupt: (conversationId) => {
        const running = events.turnState(conversationId) === "working";
        events.publish({ type: "interrupt", conversationId, requestedAt: Date.now() });
        // USG9: a turn parked at its budget is stopped through its durable promise.
        void usage
          .stopParked(conversationId)
          .catch((error: unknown) => logger.warn("could not stop a parked turn", { error }));
        // APR5: so is a call waiting for approval (it is denied).
        void approvals
          .stopPending(conversationId)
          .catch((error: unknown) => logger.warn("could not stop a waiting approval", { error }));
        return running;
      },
      maxBodyBytes: config.maxBodyBytes,
      logger,
      limits: config.rateLimits,
      routines: {
        routines,
        webhookMaxBodyBytes: routineSettings.webhookMaxBodyBytes,
        webhookPerMinute: routineSettings.webhookPerMinute,
        ...(config.publicUrl === undefined ? {} : { publicUrl: config.publicUrl }),
      },
      checkModel: (spec) => {
        if (spec === null || spec === "demo") return;
        models.resolve(spec);
      },
      providers: providerSettings,
      defaultModel: () => {
        try {
          const client = resolveModel(null);
          return { id: client.id, isDemo: client.isDemo };
        } catch {
          return { id: models.defaultSpec, isDemo: false };
        }
      },
      computers: {
        fileRedaction: (accountId) => secrets.fileRedaction(accountId), // SECR13
        forAccount: async (accountId) => {
          const computer = await store.ensureComputer(accountId, provider.kind);
          return {
            id: computer.id,
            provider: computer.provider,
            isolated: provider.isolated,
            kind: computer.kind,
            isolation: isolationOf(provider),
          };
        },
        isConnected: async (computerId) =>
          gateway.isConnected(computerId) ||
          ("connectedAnywhere" in gateway && (await gateway.connectedAnywhere(computerId))),
        useSelfHosted: (computerId, accountId, tokenHash) =>
          controlPlane.useSelfHosted(computerId, { accountId, tokenHash }),
        useHosted: (computerId, accountId) => controlPlane.useHosted(computerId, accountId),
        ...(config.publicUrl === undefined ? {} : { publicUrl: config.publicUrl }),
        status: (computerId) => controlPlane.status(computerId),
        wake: (computerId, accountId) => controlPlane.wake(computerId, accountId),
        sleep: (computerId) => controlPlane.sleep(computerId),
        // Files go through the computer's own worker, as its user (decision 0011).
        files: createFilesClient(gateway),
        networkPolicy: async (computerId) => {
          const stored = await store.getNetworkPolicy(computerId);
          return stored === null ? defaultEgressPolicy : parseEgressPolicy(stored);
        },
        setNetworkPolicy: async (computerId, accountId, input) => {
          // P8: throws InvalidRequestError (400) saying why a rule can never be reached.
          const policy = runtime.parseUserPolicy(input);
          await store.setNetworkPolicy(computerId, input);
          await store.audit({
            accountId,
            action: "computer.network_policy",
            target: computerId,
            detail: { policy: input },
          });
          await runtime.applyPolicy(computerId);
          return policy;
        },
        egressEnforced: runtime.egress !== undefined,
      },
      ports,
      liveView,
      results: results.api,
      helpers: helpers.service,
      health,
    });
    // The web app at `/`; in embedded mode it signs the local user in from loopback without ceremony.
    api.route(
      "/",
      createWebHandler(
        config.restate.mode === "embedded"
          ? {
              localSignIn: {
                tokenFile: admin.tokenFile,
                // Defence in depth: the proxy never connects to Roost's ports (P3), and if it
                // did, a connection it opened is never a local user.
                isProxyConnection: (address, peerPort) =>
                  runtime.egress?.isOwnConnection(address, peerPort) ?? false,
              },
            }
          : {},
      ),
    );
    fetchApi = (request, env) => api.fetch(request, env);

    const sweepIntervalMs = options.sweepIntervalMs ?? 5000;
    const sweep = () =>
      Promise.all([
        kicker
          .sweep()
          .catch((error: unknown) => logger.warn("sweep of waiting messages failed", { error })),
        // Routines stored while the engine could not be told are armed now (RTN2).
        routines
          .armPending()
          .catch((error: unknown) => logger.warn("arming stored routines failed", { error })),
        // USG8: parked turns whose budgets allow them again (a release that failed).
        usage
          .sweepParked()
          .catch((error: unknown) => logger.warn("sweep of parked turns failed", { error })),
        // APR6: decisions whose release was lost (a kill -9 between the decision and the release).
        approvals
          .sweep()
          .catch((error: unknown) => logger.warn("sweep of approvals failed", { error })),
      ]);
    void sweep();
    const sweepTimer = setInterval(() => void sweep(), sweepIntervalMs);
    sweepTimer.unref();
    cleanups.push(async () => clearInterval(sweepTimer));
    // Slack's Socket Mode links connect from every node (slack/ SLK23); closed before the store.
    void slack.sockets
      .startAll()
      .catch((error: unknown) => logger.warn("slack socket mode did not start", { error }));
    cleanups.push(() => slack.sockets.close());

    return {
      url,
      port,
      adminTokenFile: admin.tokenFile,
      store,
      events,
      engine,
      provider,
      notifier: results.notifier,
      usage,
      approvals,
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * Ports a preview may not reach (PORT3): a local computer's own proxy forwarders; and where the
 * computer's loopback is the host's (the `process` provider), Roost's own ports.
 */
function reservedPreviewPorts(
  kind: string,
  platformPorts: ReadonlySet<number>,
): ReadonlyMap<number, string> {
  if (kind === "local")
    return new Map([
      [forwarderPorts.http, "it is the computer's HTTP proxy to the network (HTTP_PROXY)"],
      [forwarderPorts.socks, "it is the computer's SOCKS proxy to the network (ALL_PROXY)"],
    ]);
  if (kind === "process")
    return new Map(
      [...platformPorts].map((port) => [port, "it is one of Roost's own ports on this host"]),
    );
  return new Map();
}

function restatePorts(config: RoostConfig): number[] {
  if (config.restate.mode === "embedded")
    return [config.restate.ingressPort, config.restate.adminPort, config.restate.nodePort];
  return [config.restate.ingressUrl, config.restate.adminUrl].flatMap((url) => urlPort(url));
}

function storePorts(config: RoostConfig): number[] {
  return config.store.kind === "postgres" ? urlPort(config.store.url, 5432) : [];
}

function urlPort(text: string, fallback?: number): number[] {
  try {
    const url = new URL(text);
    if (url.port !== "") return [Number(url.port)];
    if (fallback !== undefined) return [fallback];
    return url.protocol === "https:" ? [443] : [80];
  } catch {
    return fallback === undefined ? [] : [fallback];
  }
}

function openBlobStore(config: RoostConfig): BlobStore {
  const blobs = config.computers.blobs;
  if (blobs.kind === "local") return createLocalBlobStore(blobs.dir);
  return createS3BlobStore({
    bucket: blobs.bucket,
    region: blobs.region,
    prefix: blobs.prefix,
    ...(blobs.endpoint === undefined ? {} : { endpoint: blobs.endpoint }),
    ...(blobs.accessKeyId === undefined ? {} : { accessKeyId: blobs.accessKeyId }),
    ...(blobs.secretAccessKey === undefined ? {} : { secretAccessKey: blobs.secretAccessKey }),
    ...(blobs.forcePathStyle === undefined ? {} : { forcePathStyle: blobs.forcePathStyle }),
  });
}

function closeHttp(server: ServerType): Promise<void> {
  return new Promise((resolve) => {
    if ("closeAllConnections" in server) server.closeAllConnections();
    server.close(() => resolve());
  });
}

interface TrackedConnections {
  readonly sessions: Set<http2.ServerHttp2Session>;
  readonly sockets: Set<Socket>;
  /** Set once the grace is over: what is still open, or arrives late, is cut. */
  cutting: boolean;
}

function trackConnections(server: http2.Http2Server): TrackedConnections {
  const tracked: TrackedConnections = { sessions: new Set(), sockets: new Set(), cutting: false };
  server.on("connection", (socket: Socket) => {
    if (tracked.cutting) {
      socket.destroy();
      return;
    }
    tracked.sockets.add(socket);
    socket.once("close", () => tracked.sockets.delete(socket));
  });
  server.on("session", (session) => {
    tracked.sessions.add(session);
    session.once("close", () => tracked.sessions.delete(session));
  });
  return tracked;
}

/**
 * Stops taking invocations and lets running ones finish for `graceMs`; then the rest are cut.
 * A cut invocation is handed back to Restate, which retries it from its journal (here after a
 * restart, or on another node): loops waiting in their follow-up window hold their stream open
 * for minutes and must not hold the shutdown with them. The sockets are cut as well as the
 * sessions: a destroyed session does not always let go of its socket.
 */
function closeHttp2(
  server: http2.Http2Server,
  connections: TrackedConnections,
  graceMs: number,
): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => {
      clearTimeout(cutTimer);
      resolve();
    });
    for (const session of connections.sessions) session.close();
    const cut = () => {
      connections.cutting = true;
      for (const session of connections.sessions) session.destroy();
      for (const socket of connections.sockets) socket.destroy();
    };
    const cutTimer = setTimeout(cut, graceMs);
  });
}

/**
 * HOME3: the URL at which Restate reaches this node's own service port: ROOST_NODE_SERVICE_URL,
 * else the bound address (loopback for a wildcard bind).
 */
export function ownServiceUrl(configured: string | undefined, host: string, port: number): string {
  if (configured !== undefined) return configured.replace(/\/+$/, "");
  const address = host === "0.0.0.0" || host === "::" || host === "" ? "127.0.0.1" : host;
  return `http://${address.includes(":") ? `[${address}]` : address}:${port}`;
}

/** Decision 0041: the combinations a role needs, refused at start with how to fix them. */
function checkRole(config: RoostConfig, role: "api" | "computer-host"): void {
  if (role === "computer-host") {
    if (config.node.computers === "remote")
      throw new Error(
        "roost computer-host runs computers itself: unset ROOST_COMPUTERS=remote (that is for API nodes beside computer hosts)",
      );
    if (config.restate.mode !== "external" || config.store.kind !== "postgres")
      throw new Error(
        "roost computer-host joins a scale-out: it needs the shared Postgres (ROOST_STORE=postgres) and the external Restate (ROOST_RESTATE_INGRESS_URL, ROOST_RESTATE_ADMIN_URL) of the API nodes",
      );
  }
  if (
    (role === "computer-host" || config.node.computers === "remote") &&
    config.forwarding === undefined
  )
    throw new Error(
      `${role === "computer-host" ? "roost computer-host" : "ROOST_COMPUTERS=remote"} needs node-to-node forwarding: set ROOST_NODE_URL (this node's internal endpoint) and ROOST_NODE_SECRET (the same on every node), so that calls reach workers connected to another node`,
    );
  if (role === "computer-host" && config.node.id === undefined)
    throw new Error(
      "roost computer-host needs ROOST_NODE_ID: the id the API nodes list in ROOST_COMPUTER_HOSTS",
    );
}
