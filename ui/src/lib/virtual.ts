// Windowing for long lists: only the rows in view (plus a margin) are rendered, so 10,000
// conversations scroll as smoothly as 10.

export type Window = { start: number; end: number; padTop: number; padBottom: number };

/** Which rows of `total` (each `rowHeight` px) to render for a viewport of `height` px scrolled
 *  to `scrollTop`, with `overscan` extra rows on each side. `end` is exclusive. */
export function visibleWindow(
  total: number,
  rowHeight: number,
  scrollTop: number,
  height: number,
  overscan = 8,
): Window {
  if (total <= 0 || rowHeight <= 0) return { start: 0, end: 0, padTop: 0, padBottom: 0 };
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const visible = Math.ceil(Math.max(0, height) / rowHeight) + 1;
  const start = Math.max(0, Math.min(total, first - overscan));
  const end = Math.max(start, Math.min(total, first + visible + overscan));
  return { start, end, padTop: start * rowHeight, padBottom: (total - end) * rowHeight };
}

/** The scrollTop that brings row `index` into view (unchanged when it already is). */
export function scrollToRow(index: number, rowHeight: number, scrollTop: number, height: number): number {
  const top = index * rowHeight;
  const bottom = top + rowHeight;
  if (top < scrollTop) return top;
  if (bottom > scrollTop + height) return bottom - height;
  return scrollTop;
}
