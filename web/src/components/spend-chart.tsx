/**
 * Tokens spent per day as bars (uPlot). Loaded on demand by the overview, so the charting library
 * is not part of the first load. The numbers are also in a table beside it (for screen readers
 * and for anyone who prefers them).
 */
import type { JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface DaySpend {
  /** Local midnight of the day, in seconds (uPlot's time axis). */
  day: number;
  tokens: number;
}

export default function SpendChart({ days, label }: { days: DaySpend[]; label: string }): JSX.Element {
  const holder = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = holder.current;
    if (!element) return;
    const bars = uPlot.paths.bars?.({ size: [0.6, 40] });
    const width = (): number => Math.max(240, element.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        legend: { show: false },
        cursor: { show: true, points: { show: false } },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(5, Math.ceil(max * 1.15))] } },
        axes: [
          { stroke: 'currentColor', grid: { show: false } },
          { stroke: 'currentColor', grid: { stroke: 'rgba(127,127,127,0.25)' }, size: 48 },
        ],
        series: [{}, { label, stroke: '#1d4ed8', fill: 'rgba(29,78,216,0.55)', width: 1, ...(bars ? { paths: bars } : {}), points: { show: false } }],
      },
      [days.map((d) => d.day), days.map((d) => d.tokens)],
      element,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 220 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [days, label]);
  return <div ref={holder} class="chart" aria-hidden="true" />;
}
