/**
 * secrets/: secrets per bot and per user (issue 12 §2, docs/secrets.md, decision 0023): sealed at
 * rest, injected into the computer's tool processes, redacted from everything Roost shows.
 */
export {
  createSecretCipher,
  loadSecretsKey,
  parseSecretsKey,
  type SecretCipher,
} from "./crypto.ts";
export {
  createRedactor,
  createStreamRedactor,
  encodingsOf,
  minFragmentChars,
  redactedMark,
  type Redactor,
  type StreamRedactor,
} from "./redactor.ts";
export {
  brokerHostsProblem,
  brokerPlaceholder,
  createBrokeredSecrets,
  createSecretsService,
  maxSecretBytes,
  maxSecretsPerOwner,
  minSecretBytes,
  secretNameProblem,
  secretValueProblem,
  type BrokeredSecret,
  type SecretsService,
} from "./service.ts";
export {
  createRequestSecretTool,
  createSecretRedaction,
  requestSecretToolName,
  type SecretRedaction,
} from "./hooks.ts";
