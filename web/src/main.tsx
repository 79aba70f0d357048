import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./app.tsx";
import { applyTheme } from "./lib/theme.ts";
import "./styles.css";

applyTheme();
const root = document.getElementById("root");
if (root === null) throw new Error("index.html has no #root");
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
// Warm the markdown and highlighting chunk while the first screen settles.
setTimeout(() => void import("./components/markdown.tsx"), 300);
