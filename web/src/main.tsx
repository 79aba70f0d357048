import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./app.tsx";
import { preloadScreen } from "./components/screens.tsx";
import { parseRoute } from "./lib/router.ts";
import { applyTheme } from "./lib/theme.ts";
import "./styles.css";

applyTheme();
// The first screen's chunk loads while the sign-in check runs, not after it.
preloadScreen(parseRoute(window.location.pathname));
const root = document.getElementById("root");
if (root === null) throw new Error("index.html has no #root");
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
// Warm the markdown and highlighting chunk while the first screen settles.
setTimeout(() => void import("./components/markdown.tsx"), 300);
