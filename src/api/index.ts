export { createApi, type ApiDependencies } from "./app.ts";
