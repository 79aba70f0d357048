/**
 * Files as a person hands them to the page, for browser tests: a DataTransfer in the page holding
 * text files (for drop events), and a paste of one into an element. The tests' TypeScript has no
 * DOM types, so the page's globals are named here once.
 */
import type { JSHandle, Locator, Page } from "playwright-core";

interface PageGlobals {
  DataTransfer: new () => { items: { add(file: File): void } };
  ClipboardEvent: new (
    type: string,
    init: { clipboardData: unknown; bubbles: boolean; cancelable: boolean },
  ) => unknown;
}

/** A DataTransfer in the page holding one text file. */
export function fileTransfer(page: Page, name: string, text: string): Promise<JSHandle> {
  return page.evaluateHandle(
    ([fileName, content]) => {
      const globals = globalThis as unknown as PageGlobals;
      const transfer = new globals.DataTransfer();
      transfer.items.add(new File([content], fileName, { type: "text/plain" }));
      return transfer;
    },
    [name, text] as const,
  );
}

/** Pastes the files of `transfer` into `target`, as Ctrl-V of copied files does. */
export async function pasteInto(target: Locator, transfer: JSHandle): Promise<void> {
  await target.evaluate((element, clipboardData) => {
    const globals = globalThis as unknown as PageGlobals;
    (element as unknown as { dispatchEvent(event: unknown): boolean }).dispatchEvent(
      new globals.ClipboardEvent("paste", { clipboardData, bubbles: true, cancelable: true }),
    );
  }, transfer);
}
