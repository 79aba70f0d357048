/**
 * The `computer` tool (docs/browser.md): the rest of the bot's screen, driven like a person
 * would, with xdotool on the screen's X display; screenshots are read from the display's
 * framebuffer file (browser-xwd.ts), so no extra package is needed.
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import type { DesktopInput, DesktopOutput } from "../protocol/index.ts";
import { encodePng, parseXwd } from "./browser-xwd.ts";
import type { ScreenHandle, ScreenManager } from "./screens.ts";
import { ToolFailure, type ToolContext } from "./tool-context.ts";

function xdotool(
  screen: ScreenHandle,
  env: Readonly<Record<string, string>>,
  args: string[],
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("xdotool", args, {
      env: { ...env, DISPLAY: `:${screen.display}` },
      stdio: ["ignore", "ignore", "pipe"],
      signal,
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-2000);
    });
    child.once("error", (error) =>
      reject(new ToolFailure("io_error", `xdotool failed: ${error.message}`)),
    );
    child.once("exit", (code) => {
      if (code === 0) resolve();
      else
        reject(
          new ToolFailure(
            "invalid_input",
            `xdotool ${args[0]} failed (${code}): ${stderr.trim() || "no message"}`,
          ),
        );
    });
  });
}

function need<T>(value: T | undefined, field: string, action: string): T {
  if (value === undefined)
    throw new ToolFailure("invalid_input", `computer ${action} needs ${field}`);
  return value;
}

/** Reads the whole display as a PNG. */
export async function screenshotOf(screen: ScreenHandle) {
  const image = parseXwd(await readFile(screen.framebufferFile));
  return { width: image.width, height: image.height, png: encodePng(image) };
}

export async function desktopTool(
  input: DesktopInput,
  context: ToolContext,
  screens: ScreenManager,
): Promise<DesktopOutput> {
  const botId = context.botId;
  if (botId === undefined)
    throw new ToolFailure(
      "invalid_input",
      "computer calls need the bot id (the server sends it with each call)",
    );
  await context.markStarted();
  return screens.use(botId, async (screen) => {
    const run = (args: string[]) => xdotool(screen, context.commandEnv, args, context.signal);
    const inside = (x: number, y: number) => {
      if (x >= screen.width || y >= screen.height)
        throw new ToolFailure(
          "invalid_input",
          `(${x}, ${y}) is outside the ${screen.width}x${screen.height} screen`,
        );
      return [String(x), String(y)];
    };
    const buttons = { left: "1", middle: "2", right: "3" } as const;
    let text: string;
    switch (input.action) {
      case "screenshot": {
        const shot = await screenshotOf(screen);
        return {
          action: input.action,
          width: shot.width,
          height: shot.height,
          text: `A screenshot of the whole screen (${shot.width}x${shot.height}).`,
          image: {
            mimeType: "image/png",
            data: shot.png.toString("base64"),
            width: shot.width,
            height: shot.height,
          },
        };
      }
      case "move": {
        await run([
          "mousemove",
          "--sync",
          ...inside(need(input.x, "x", "move"), need(input.y, "y", "move")),
        ]);
        text = `Moved the mouse to (${input.x}, ${input.y}).`;
        break;
      }
      case "click": {
        const at = inside(need(input.x, "x", "click"), need(input.y, "y", "click"));
        const button = buttons[input.button ?? "left"];
        await run([
          "mousemove",
          "--sync",
          ...at,
          "click",
          ...(input.double === true ? ["--repeat", "2"] : []),
          button,
        ]);
        text = `Clicked ${input.button ?? "left"}${input.double === true ? " twice" : ""} at (${input.x}, ${input.y}).`;
        break;
      }
      case "drag": {
        const from = inside(need(input.x, "x", "drag"), need(input.y, "y", "drag"));
        const to = inside(need(input.toX, "toX", "drag"), need(input.toY, "toY", "drag"));
        await run([
          "mousemove",
          "--sync",
          ...from,
          "mousedown",
          "1",
          "mousemove",
          "--sync",
          ...to,
          "mouseup",
          "1",
        ]);
        text = `Dragged from (${input.x}, ${input.y}) to (${input.toX}, ${input.toY}).`;
        break;
      }
      case "type": {
        const value = need(input.text, "text", "type");
        await run(["type", "--delay", "8", "--", value]);
        text = `Typed ${value.length} characters.`;
        break;
      }
      case "key": {
        await run(["key", "--", need(input.key, "key", "key")]);
        text = `Pressed ${input.key}.`;
        break;
      }
      case "scroll": {
        const direction = need(input.direction, "direction", "scroll");
        const button = { up: "4", down: "5", left: "6", right: "7" }[direction];
        const at =
          input.x !== undefined && input.y !== undefined
            ? ["mousemove", "--sync", ...inside(input.x, input.y)]
            : [];
        await run([...at, "click", "--repeat", String(input.amount ?? 3), button]);
        text = `Scrolled ${direction} ${input.amount ?? 3} clicks.`;
        break;
      }
    }
    return { action: input.action, width: screen.width, height: screen.height, text };
  });
}
