import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Root is web/ (npm run build:web runs `vite build web`); the server serves web/dist.
export default defineConfig(({ command }) => {
  // Test runners set NODE_ENV=test, which would bundle React's and micromark's development builds.
  if (command === "build") process.env.NODE_ENV = "production";
  return {
    plugins: [react()],
    base: "/",
    build: {
      outDir: "dist",
      emptyOutDir: true,
      target: "es2022",
      sourcemap: false,
      assetsInlineLimit: 0,
      chunkSizeWarningLimit: 400,
    },
    server: {
      // `npx vite web` proxies the API to a running `npm start`.
      proxy: { "/v1": "http://127.0.0.1:7700", "/auth": "http://127.0.0.1:7700" },
    },
  };
});
