/**
 * attachments/: what tool calls leave in a conversation for its owner — screenshots, images,
 * downloads, recordings — kept in the blob store and listed by the API (docs/web-tools.md).
 */
export {
  attachmentBlobPrefix,
  attachmentIdOf,
  attachmentView,
  candidatesOf,
  withAttachments,
  type AttachmentsOptions,
  type ComputerFileReader,
} from "./collect.ts";
export { withBrowserRecording } from "./recording.ts";
