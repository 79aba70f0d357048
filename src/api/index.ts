export { createApi, type ApiDependencies } from "./app.ts";
export { createFilesClient, type FilesClient, type WorkerCaller } from "./computer-files.ts";
export { createPortPreviews, type PortPreviews, type PortsService } from "./computer-ports.ts";
export { createLiveView, type LiveView, type LiveViewService } from "./screens.ts";
export { createPreviewSigner, loadPreviewSecret, type PreviewSigner } from "./preview-tokens.ts";
export type { ResultsService } from "./results-routes.ts";
