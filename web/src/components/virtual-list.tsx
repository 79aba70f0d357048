/**
 * A windowed list for long, live, variable-height content (the timeline of a conversation with
 * thousands of steps; issue 16 §7). It owns its scrolling element; rows outside the window are
 * two spacers, so the scrollbar still spans the whole list.
 *
 * Invariants:
 *   VL1 only the rows within the viewport plus `overscanPx` above and below it are in the DOM.
 *   VL2 a row's height is what its wrapper measured (a ResizeObserver, before paint); a row not
 *       yet drawn counts as the mean measured height (`estimateHeightPx` before any).
 *   VL3 away from the bottom, the reading position is a row's key and the distance into it: rows
 *       prepended, rows above growing or shrinking, the header changing never move what is on
 *       screen (keyed, so it holds when older pages arrive and every index shifts).
 *   VL4 at the bottom (within `bottomThresholdPx`), the list stays at the bottom as rows are
 *       appended and as rows or the footer grow (a reply streaming in).
 *   VL5 the scroll position is only ever written by VL3 and VL4's restore, and by scrollToBottom;
 *       the browser's own scroll anchoring is off (`overflow-anchor: none`), so the two never fight.
 */
import {
  createContext,
  memo,
  useContext,
  useCallback,
  useImperativeHandle,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type HTMLAttributes,
  type ReactNode,
  type Ref,
  type UIEvent,
} from "react";
import "./virtual-list.css";

export interface VirtualListHandle {
  /** Follow the newest again: jump to the bottom and stay there (VL4). */
  scrollToBottom(): void;
  isAtBottom(): boolean;
}

export interface VirtualListProps<T> extends Omit<HTMLAttributes<HTMLDivElement>, "children"> {
  items: readonly T[];
  /** Stable across renders and unique: measured heights and the reading position follow it. */
  itemKey(item: T): string;
  renderItem(item: T, index: number): ReactNode;
  /** Above the rows, inside the scrolling content (e.g. "show earlier"). */
  header?: ReactNode;
  /** Below the rows (e.g. pending messages, the reply streaming in). */
  footer?: ReactNode;
  /** Class of the content element that holds header, rows and footer. */
  innerClassName?: string;
  /** @default 80 */
  estimateHeightPx?: number;
  /** Rows drawn beyond each edge of the viewport, in pixels. @default 800 */
  overscanPx?: number;
  /** Closer than this to the bottom counts as at the bottom (VL4). @default 80 */
  bottomThresholdPx?: number;
  ref?: Ref<VirtualListHandle>;
}

/**
 * For a row's content that changes its own size in a render of its own (markdown swapped in
 * later): called from its layout effect, the list measures its rows and restores the position in
 * the same task as the change, so nothing (a scroll event, a read of the page) sees the rows
 * moved before the ResizeObserver's restore.
 */
const RowResized = createContext<() => void>(() => {});
export function useRowResized(): () => void {
  return useContext(RowResized);
}

interface Layout {
  readonly keys: readonly string[];
  readonly indexByKey: ReadonlyMap<string, number>;
  /** offsets[i] is the top of row i in the list; offsets[n] is the list's height. */
  readonly offsets: Float64Array;
}

interface Position {
  atBottom: boolean;
  /** VL3: the row at the viewport's top edge, and how far the edge is into it. */
  anchorKey: string | undefined;
  anchorOffsetPx: number;
}

function offsetsOf(
  keys: readonly string[],
  heights: ReadonlyMap<string, number>,
  fallback: number,
) {
  let measuredTotal = 0;
  let measuredCount = 0;
  for (const height of heights.values()) {
    measuredTotal += height;
    measuredCount++;
  }
  const estimate = measuredCount === 0 ? fallback : measuredTotal / measuredCount;
  const offsets = new Float64Array(keys.length + 1);
  for (let index = 0; index < keys.length; index++)
    offsets[index + 1] = offsets[index]! + (heights.get(keys[index]!) ?? estimate);
  return offsets;
}

/** The last row whose top is at or above `y` (0 for an empty list). */
function rowAt(offsets: Float64Array, y: number): number {
  let low = 0;
  let high = Math.max(0, offsets.length - 2);
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (offsets[middle]! <= y) low = middle;
    else high = middle - 1;
  }
  return low;
}

/** The viewport's top in list coordinates that `position` asks for. */
function targetTop(layout: Layout, position: Position, viewportPx: number): number {
  const total = layout.offsets[layout.keys.length]!;
  if (position.atBottom) return Math.max(0, total - viewportPx);
  const index =
    position.anchorKey === undefined ? undefined : layout.indexByKey.get(position.anchorKey);
  return index === undefined ? 0 : layout.offsets[index]! + position.anchorOffsetPx;
}

function windowOf(layout: Layout, top: number, viewportPx: number, overscanPx: number) {
  const count = layout.keys.length;
  if (count === 0) return { start: 0, end: 0 };
  const start = rowAt(layout.offsets, top - overscanPx);
  const end = Math.min(count, rowAt(layout.offsets, top + viewportPx + overscanPx) + 1);
  return { start, end };
}

/**
 * One row's content. A row that stays in the window while it moves is not drawn again: only the
 * rows entering it are (the item, its index and `renderItem` are all the same as before).
 */
const VirtualRow = memo(function VirtualRow({
  item,
  index,
  render,
}: {
  item: unknown;
  index: number;
  render(item: unknown, index: number): ReactNode;
}) {
  return render(item, index);
});

export function VirtualList<T>({
  items,
  itemKey,
  renderItem,
  header,
  footer,
  innerClassName,
  estimateHeightPx = 80,
  overscanPx = 800,
  bottomThresholdPx = 80,
  ref,
  onScroll,
  style,
  ...rest
}: VirtualListProps<T>) {
  const scroller = useRef<HTMLDivElement>(null);
  const content = useRef<HTMLDivElement>(null);
  const topSpacer = useRef<HTMLDivElement>(null);
  const heights = useRef(new Map<string, number>());
  const position = useRef<Position>({
    atBottom: true,
    anchorKey: undefined,
    anchorOffsetPx: 0,
  });
  // Before the first layout, a screen's worth: the window is corrected once it is measured.
  const viewportPx = useRef(typeof window === "undefined" ? 800 : window.innerHeight);
  const [measured, setMeasured] = useState(0);
  const [, setMoved] = useState(0);

  const keys = useMemo(() => items.map(itemKey), [items, itemKey]);
  const indexByKey = useMemo(() => new Map(keys.map((key, index) => [key, index])), [keys]);
  const layout = useMemo<Layout>(
    () => ({ keys, indexByKey, offsets: offsetsOf(keys, heights.current, estimateHeightPx) }),
    // `measured` stands for the heights map, which is mutated in place.
    [keys, indexByKey, estimateHeightPx, measured],
  );
  const { start, end } = windowOf(
    layout,
    targetTop(layout, position.current, viewportPx.current),
    viewportPx.current,
    overscanPx,
  );

  // What is on the page, for the observers and the scroll handler (they run between renders).
  const committed = useRef({ layout, start, end });

  const listTop = useCallback((element: HTMLDivElement): number => {
    const spacer = topSpacer.current;
    if (spacer === null) return 0;
    return (
      spacer.getBoundingClientRect().top -
      element.getBoundingClientRect().top -
      element.clientTop +
      element.scrollTop
    );
  }, []);

  /**
   * VL3: the drawn row at the viewport's top edge, read from the page: what is on screen is the
   * truth even when a size change has not reached the offsets yet.
   */
  const anchorOnPage = useCallback((element: HTMLDivElement) => {
    const inner = content.current;
    if (inner === null) return undefined;
    const box = element.getBoundingClientRect();
    const edge = box.top + element.clientTop;
    for (const row of inner.children) {
      const key = (row as HTMLElement).dataset.virtualKey;
      if (key === undefined) continue;
      const rowBox = row.getBoundingClientRect();
      if (rowBox.bottom <= edge) continue;
      if (rowBox.top >= box.bottom) return undefined; // the drawn rows are all below the viewport
      return { anchorKey: key, anchorOffsetPx: edge - rowBox.top };
    }
    return undefined;
  }, []);

  /** The same from the offsets, when no drawn row is on screen (a jump, before the window moves). */
  const anchorByOffsets = useCallback(
    (element: HTMLDivElement) => {
      const { layout: current } = committed.current;
      const top = element.scrollTop - listTop(element);
      const index = rowAt(current.offsets, top);
      return { anchorKey: current.keys[index], anchorOffsetPx: top - current.offsets[index]! };
    },
    [listTop],
  );

  /** The scroll position as the scroll handler last saw it, or as restore last left it. */
  const seenScrollTop = useRef(0);

  /** VL3, VL4: `position` from where the viewport is now. */
  const syncPosition = useCallback(
    (element: HTMLDivElement) => {
      const fromBottom = element.scrollHeight - element.scrollTop - element.clientHeight;
      position.current = {
        atBottom: fromBottom <= bottomThresholdPx,
        ...(anchorOnPage(element) ?? anchorByOffsets(element)),
      };
      seenScrollTop.current = element.scrollTop;
    },
    [bottomThresholdPx, anchorOnPage, anchorByOffsets],
  );

  /** VL3, VL4: put the viewport back where `position` says. */
  const restore = useCallback(() => {
    const element = scroller.current;
    if (element === null) return;
    // Scrolled (by the person or by code) since the handler last ran: that is the new position,
    // not something to undo (its scroll event comes later, in the next frame).
    if (Math.abs(element.scrollTop - seenScrollTop.current) > 0.5) syncPosition(element);
    const { layout: current } = committed.current;
    let desired: number;
    if (position.current.atBottom) {
      desired = element.scrollHeight - element.clientHeight;
    } else {
      const key = position.current.anchorKey;
      const index = key === undefined ? undefined : current.indexByKey.get(key);
      if (index === undefined) return; // the anchor row left the list: stay where the browser is
      desired = listTop(element) + current.offsets[index]! + position.current.anchorOffsetPx;
    }
    if (Math.abs(element.scrollTop - desired) > 0.5) element.scrollTop = desired;
    seenScrollTop.current = element.scrollTop;
  }, [listTop, syncPosition]);

  /** Re-renders when the viewport now needs rows the window does not hold. */
  const moveWindowIfNeeded = useCallback(() => {
    const element = scroller.current;
    if (element === null) return;
    const { layout: current, start: shownStart, end: shownEnd } = committed.current;
    const top = element.scrollTop - listTop(element);
    const wanted = windowOf(current, top, element.clientHeight, overscanPx);
    if (wanted.start !== shownStart || wanted.end !== shownEnd) setMoved((value) => value + 1);
  }, [listTop, overscanPx]);

  const bottomSpacer = useRef<HTMLDivElement>(null);
  const sizeSpacers = useCallback((offsets: Float64Array, start: number, end: number) => {
    const total = offsets[offsets.length - 1]!;
    if (topSpacer.current !== null) topSpacer.current.style.height = `${offsets[start]}px`;
    if (bottomSpacer.current !== null)
      bottomSpacer.current.style.height = `${total - (offsets[end] ?? total)}px`;
  }, []);

  /**
   * VL2: the offsets restore and the scroll handler use hold the new heights at once (this runs
   * before paint), and so do the spacers, or the page and the offsets would disagree until the
   * next render.
   */
  const heightsChanged = useCallback(() => {
    const current = committed.current;
    const offsets = offsetsOf(current.layout.keys, heights.current, estimateHeightPx);
    committed.current = { ...current, layout: { ...current.layout, offsets } };
    sizeSpacers(offsets, current.start, current.end);
    restore();
    setMeasured((value) => value + 1);
  }, [restore, sizeSpacers, estimateHeightPx]);

  const rowObserver = useRef<ResizeObserver | undefined>(undefined);
  const observeRow = useCallback(
    (element: HTMLDivElement | null) => {
      if (element === null) return;
      rowObserver.current ??= new ResizeObserver((entries) => {
        let changed = false;
        for (const entry of entries) {
          const key = (entry.target as HTMLElement).dataset.virtualKey;
          const height = entry.borderBoxSize[0]?.blockSize ?? entry.contentRect.height;
          if (key === undefined || heights.current.get(key) === height) continue;
          heights.current.set(key, height);
          changed = true;
        }
        if (changed) heightsChanged();
      });
      const observer = rowObserver.current;
      observer.observe(element);
      return () => observer.unobserve(element);
    },
    [heightsChanged],
  );

  /**
   * useRowResized: the drawn rows measured in the task that changed them (once per task, in a
   * microtask, however many rows changed in the commit).
   */
  const remeasureQueued = useRef(false);
  const remeasure = useCallback(() => {
    remeasureQueued.current = false;
    let changed = false;
    for (const row of content.current?.children ?? []) {
      const key = (row as HTMLElement).dataset.virtualKey;
      if (key === undefined) continue;
      const height = row.getBoundingClientRect().height;
      if (heights.current.get(key) === height) continue;
      heights.current.set(key, height);
      changed = true;
    }
    if (changed) heightsChanged();
  }, [heightsChanged]);

  const rowResized = useCallback(() => {
    if (remeasureQueued.current) return;
    remeasureQueued.current = true;
    queueMicrotask(remeasure);
  }, [remeasure]);

  // The viewport and the content as a whole (header, footer, a reply streaming in): VL3, VL4.
  useLayoutEffect(() => {
    const element = scroller.current;
    const inner = content.current;
    if (element === null || inner === null) return;
    const observer = new ResizeObserver(() => {
      viewportPx.current = element.clientHeight;
      restore();
      moveWindowIfNeeded();
    });
    observer.observe(element);
    observer.observe(inner);
    return () => observer.disconnect();
  }, [restore, moveWindowIfNeeded]);
  useLayoutEffect(
    () => () => {
      rowObserver.current?.disconnect();
      rowObserver.current = undefined;
    },
    [],
  );

  useLayoutEffect(() => {
    // VL2: rows drawn for the first time are measured now, not a frame later, so the position
    // restored below is right before the first paint; heights measured while this render was
    // under way (a deferred render can take several frames) count too.
    for (const row of content.current?.children ?? []) {
      const key = (row as HTMLElement).dataset.virtualKey;
      if (key !== undefined && !heights.current.has(key))
        heights.current.set(key, row.getBoundingClientRect().height);
    }
    const offsets = offsetsOf(layout.keys, heights.current, estimateHeightPx);
    committed.current = { layout: { ...layout, offsets }, start, end };
    sizeSpacers(offsets, start, end);
    const element = scroller.current;
    if (element !== null && element.clientHeight !== viewportPx.current) {
      viewportPx.current = element.clientHeight;
      setMoved((value) => value + 1);
    }
    restore();
  });

  const handleScroll = useCallback(
    (event: UIEvent<HTMLDivElement>) => {
      // The echo of restore's own write (or no move at all) says nothing new about the position,
      // and reading it from the page now would be wrong if a row changed size since (a task
      // between the write and this event, e.g. a row's markdown arriving): its ResizeObserver
      // restore comes after this handler in the same frame.
      const element = event.currentTarget;
      if (Math.abs(element.scrollTop - seenScrollTop.current) > 0.5) syncPosition(element);
      moveWindowIfNeeded();
      onScroll?.(event);
    },
    [syncPosition, moveWindowIfNeeded, onScroll],
  );

  useImperativeHandle(
    ref,
    () => ({
      scrollToBottom() {
        position.current = { atBottom: true, anchorKey: undefined, anchorOffsetPx: 0 };
        seenScrollTop.current = scroller.current?.scrollTop ?? 0;
        restore();
        setMoved((value) => value + 1);
      },
      isAtBottom: () => position.current.atBottom,
    }),
    [restore],
  );

  const total = layout.offsets[keys.length]!;
  return (
    <div
      {...rest}
      ref={scroller}
      onScroll={handleScroll}
      style={{ ...style, overflowAnchor: "none" }} // VL5
    >
      <RowResized value={rowResized}>
        <div className={innerClassName} ref={content}>
          {header}
          <div
            ref={topSpacer}
            className="virtual-spacer"
            style={{ height: layout.offsets[start] }}
          />
          {items.slice(start, end).map((item, offset) => {
            const key = keys[start + offset]!;
            return (
              <div key={key} className="virtual-item" data-virtual-key={key} ref={observeRow}>
                <VirtualRow item={item} index={start + offset} render={renderItem} />
              </div>
            );
          })}
          <div
            ref={bottomSpacer}
            className="virtual-spacer"
            style={{ height: total - (layout.offsets[end] ?? total) }}
          />
          {footer}
        </div>
      </RowResized>
    </div>
  );
}
