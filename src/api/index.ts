export { createApi, type ApiDependencies } from "./app.ts";
export { createFilesClient, type FilesClient, type WorkerCaller } from "./computer-files.ts";
