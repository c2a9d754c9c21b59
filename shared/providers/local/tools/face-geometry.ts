/**
 * The geometry and blending behind `face-swap`, on plain arrays (no model): Delaunay triangulation
 * (Bowyer–Watson), a piecewise-affine warp of one image onto another's landmarks, Reinhard colour
 * transfer in L*a*b*, and seamless cloning by mean-value coordinates (Farbman et al., "Coordinates
 * for Instant Image Cloning", 2009 — the membrane that Poisson cloning adds, computed directly).
 */
import { labToRgbInto, rgbToLab } from './pixels';

/** A module-local binding: hot loops then skip a global lookup (an accessor under Jest's sandbox, ~50× slower). */
const Math = globalThis.Math;

export type Point = readonly [number, number];
export type Triangle = readonly [number, number, number];

/** The smallest axis-aligned box around the points. */
export function boundingBox(points: readonly Point[]): { minX: number; minY: number; maxX: number; maxY: number } {
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const [x, y] of points) {
    minX = Math.min(minX, x);
    minY = Math.min(minY, y);
    maxX = Math.max(maxX, x);
    maxY = Math.max(maxY, y);
  }
  return { minX, minY, maxX, maxY };
}

/** Delaunay triangles (indices into `points`) by Bowyer–Watson; duplicate points are ignored. */
export function delaunay(points: readonly Point[]): Triangle[] {
  const n = points.length;
  if (n < 3) return [];
  const { minX, minY, maxX, maxY } = boundingBox(points);
  const span = Math.max(maxX - minX, maxY - minY, 1);
  const midX = (minX + maxX) / 2;
  const midY = (minY + maxY) / 2;
  const all: Point[] = [...points, [midX - 20 * span, midY - span], [midX, midY + 20 * span], [midX + 20 * span, midY - span]];
  interface Tri {
    a: number;
    b: number;
    c: number;
    cx: number;
    cy: number;
    r2: number;
  }
  const circum = (a: number, b: number, c: number): Tri => {
    const [ax, ay] = all[a];
    const [bx, by] = all[b];
    const [cx, cy] = all[c];
    const d = 2 * (ax * (by - cy) + bx * (cy - ay) + cx * (ay - by));
    if (Math.abs(d) < 1e-12) return { a, b, c, cx: 0, cy: 0, r2: Infinity };
    const ux = ((ax * ax + ay * ay) * (by - cy) + (bx * bx + by * by) * (cy - ay) + (cx * cx + cy * cy) * (ay - by)) / d;
    const uy = ((ax * ax + ay * ay) * (cx - bx) + (bx * bx + by * by) * (ax - cx) + (cx * cx + cy * cy) * (bx - ax)) / d;
    return { a, b, c, cx: ux, cy: uy, r2: (ax - ux) ** 2 + (ay - uy) ** 2 };
  };
  let triangles: Tri[] = [circum(n, n + 1, n + 2)];
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    const [px, py] = all[i];
    const key = `${px.toFixed(3)},${py.toFixed(3)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const bad: Tri[] = [];
    const keep: Tri[] = [];
    for (const t of triangles) {
      if ((px - t.cx) ** 2 + (py - t.cy) ** 2 <= t.r2 * (1 + 1e-12)) bad.push(t);
      else keep.push(t);
    }
    const edges = new Map<string, [number, number]>();
    for (const t of bad) {
      for (const [u, v] of [
        [t.a, t.b],
        [t.b, t.c],
        [t.c, t.a],
      ] as const) {
        const k = u < v ? `${u}:${v}` : `${v}:${u}`;
        if (edges.has(k)) edges.delete(k);
        else edges.set(k, [u, v]);
      }
    }
    for (const [u, v] of edges.values()) keep.push(circum(u, v, i));
    triangles = keep;
  }
  return triangles.filter((t) => t.a < n && t.b < n && t.c < n).map((t) => [t.a, t.b, t.c] as const);
}

/** Convex hull (Andrew's monotone chain), counter-clockwise in image coordinates. */
export function convexHull(points: readonly Point[]): Point[] {
  const sorted = [...points].sort((p, q) => p[0] - q[0] || p[1] - q[1]);
  if (sorted.length < 3) return sorted;
  const cross = (o: Point, a: Point, b: Point) => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const lower: Point[] = [];
  for (const p of sorted) {
    while (lower.length >= 2 && cross(lower[lower.length - 2], lower[lower.length - 1], p) <= 0) lower.pop();
    lower.push(p);
  }
  const upper: Point[] = [];
  for (let i = sorted.length - 1; i >= 0; i--) {
    const p = sorted[i];
    while (upper.length >= 2 && cross(upper[upper.length - 2], upper[upper.length - 1], p) <= 0) upper.pop();
    upper.push(p);
  }
  upper.pop();
  lower.pop();
  return [...lower, ...upper];
}

/** The affine map (a, b, c, d, e, f): x' = a·x + b·y + c, y' = d·x + e·y + f, taking triangle `from` to `to`. */
export function affineFromTriangles(from: readonly [Point, Point, Point], to: readonly [Point, Point, Point]): number[] | null {
  const [[x0, y0], [x1, y1], [x2, y2]] = from;
  const det = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0);
  if (Math.abs(det) < 1e-9) return null;
  const solve = (v0: number, v1: number, v2: number): [number, number, number] => {
    const a = ((v1 - v0) * (y2 - y0) - (v2 - v0) * (y1 - y0)) / det;
    const b = ((x1 - x0) * (v2 - v0) - (x2 - x0) * (v1 - v0)) / det;
    return [a, b, v0 - a * x0 - b * y0];
  };
  return [...solve(to[0][0], to[1][0], to[2][0]), ...solve(to[0][1], to[1][1], to[2][1])];
}

export interface RgbPlane {
  /** Interleaved RGB floats or bytes. */
  data: ArrayLike<number>;
  width: number;
  height: number;
}

function sampleBilinear(img: RgbPlane, x: number, y: number, out: Float32Array, offset: number): void {
  const { width, height, data } = img;
  const cx = Math.min(width - 1, Math.max(0, x));
  const cy = Math.min(height - 1, Math.max(0, y));
  const x0 = Math.floor(cx);
  const y0 = Math.floor(cy);
  const x1 = Math.min(width - 1, x0 + 1);
  const y1 = Math.min(height - 1, y0 + 1);
  const fx = cx - x0;
  const fy = cy - y0;
  for (let c = 0; c < 3; c++) {
    const a = data[(y0 * width + x0) * 3 + c];
    const b = data[(y0 * width + x1) * 3 + c];
    const d = data[(y1 * width + x0) * 3 + c];
    const e = data[(y1 * width + x1) * 3 + c];
    out[offset + c] = (a * (1 - fx) + b * fx) * (1 - fy) + (d * (1 - fx) + e * fx) * fy;
  }
}

/**
 * Piecewise-affine warp: every Delaunay triangle of the destination landmarks is filled from the
 * corresponding triangle of the source landmarks (bilinear sampling). Returns interleaved RGB floats
 * at the destination size and a coverage mask (1 where a triangle covered the pixel).
 */
export function warpPiecewiseAffine(
  source: RgbPlane,
  sourcePoints: readonly Point[],
  destinationPoints: readonly Point[],
  width: number,
  height: number,
  triangles: readonly Triangle[] = delaunay(destinationPoints),
): { data: Float32Array; covered: Uint8Array } {
  const data = new Float32Array(width * height * 3);
  const covered = new Uint8Array(width * height);
  for (const [i, j, k] of triangles) {
    const d: [Point, Point, Point] = [destinationPoints[i], destinationPoints[j], destinationPoints[k]];
    const s: [Point, Point, Point] = [sourcePoints[i], sourcePoints[j], sourcePoints[k]];
    const map = affineFromTriangles(d, s);
    if (!map) continue;
    const minX = Math.max(0, Math.floor(Math.min(d[0][0], d[1][0], d[2][0])));
    const maxX = Math.min(width - 1, Math.ceil(Math.max(d[0][0], d[1][0], d[2][0])));
    const minY = Math.max(0, Math.floor(Math.min(d[0][1], d[1][1], d[2][1])));
    const maxY = Math.min(height - 1, Math.ceil(Math.max(d[0][1], d[1][1], d[2][1])));
    const [[x0, y0], [x1, y1], [x2, y2]] = d;
    const area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0);
    if (Math.abs(area) < 1e-9) continue;
    const eps = -1e-6;
    for (let y = minY; y <= maxY; y++) {
      for (let x = minX; x <= maxX; x++) {
        const w0 = ((x1 - x) * (y2 - y) - (x2 - x) * (y1 - y)) / area;
        const w1 = ((x2 - x) * (y0 - y) - (x0 - x) * (y2 - y)) / area;
        const w2 = 1 - w0 - w1;
        if (w0 < eps || w1 < eps || w2 < eps) continue;
        const p = y * width + x;
        if (covered[p]) continue;
        sampleBilinear(source, map[0] * x + map[1] * y + map[2], map[3] * x + map[4] * y + map[5], data, p * 3);
        covered[p] = 1;
      }
    }
  }
  return { data, covered };
}

/** Point in polygon (even–odd rule). */
export function insidePolygon(x: number, y: number, polygon: readonly Point[]): boolean {
  let inside = false;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const [xi, yi] = polygon[i];
    const [xj, yj] = polygon[j];
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/** Distance from a point to the polygon's outline. */
export function distanceToOutline(x: number, y: number, polygon: readonly Point[]): number {
  let best = Infinity;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const [ax, ay] = polygon[j];
    const [bx, by] = polygon[i];
    const dx = bx - ax;
    const dy = by - ay;
    const len2 = dx * dx + dy * dy;
    const t = len2 > 0 ? Math.min(1, Math.max(0, ((x - ax) * dx + (y - ay) * dy) / len2)) : 0;
    best = Math.min(best, Math.hypot(x - ax - t * dx, y - ay - t * dy));
  }
  return best;
}

/** Evenly spaced points along a closed polygon's outline. */
export function resampleOutline(polygon: readonly Point[], count: number): Point[] {
  const lengths: number[] = [];
  let total = 0;
  for (let i = 0; i < polygon.length; i++) {
    const [ax, ay] = polygon[i];
    const [bx, by] = polygon[(i + 1) % polygon.length];
    const l = Math.hypot(bx - ax, by - ay);
    lengths.push(l);
    total += l;
  }
  const out: Point[] = [];
  let segment = 0;
  let walked = 0;
  for (let k = 0; k < count; k++) {
    const target = (k / count) * total;
    while (segment < polygon.length - 1 && walked + lengths[segment] < target) {
      walked += lengths[segment];
      segment++;
    }
    const t = lengths[segment] > 0 ? (target - walked) / lengths[segment] : 0;
    const [ax, ay] = polygon[segment];
    const [bx, by] = polygon[(segment + 1) % polygon.length];
    out.push([ax + (bx - ax) * t, ay + (by - ay) * t]);
  }
  return out;
}

/**
 * Reinhard et al. colour transfer ("Color Transfer between Images", 2001) restricted to a region:
 * the L*a*b* mean and deviation of `patch` (RGB floats) under `mask` are moved to those of
 * `reference` under the same mask. Deviation ratios are clamped so contrast changes stay moderate.
 */
export function transferColour(patch: Float32Array, reference: RgbPlane, mask: Uint8Array, width: number, height: number): void {
  const bytesA = new Uint8Array(width * height * 3);
  const bytesB = new Uint8Array(width * height * 3);
  for (let i = 0; i < bytesA.length; i++) {
    bytesA[i] = Math.min(255, Math.max(0, Math.round(patch[i])));
    bytesB[i] = Math.min(255, Math.max(0, Math.round(reference.data[i])));
  }
  const a = rgbToLab(bytesA, width, height, 3);
  const b = rgbToLab(bytesB, width, height, 3);
  const planesA = [a.L, a.a, a.b];
  const planesB = [b.L, b.a, b.b];
  const stats = (plane: Float32Array) => {
    let s = 0;
    let s2 = 0;
    let n = 0;
    for (let i = 0; i < plane.length; i++) {
      if (!mask[i]) continue;
      s += plane[i];
      s2 += plane[i] * plane[i];
      n++;
    }
    const mean = n ? s / n : 0;
    return { mean, std: n ? Math.sqrt(Math.max(0, s2 / n - mean * mean)) : 0 };
  };
  for (let c = 0; c < 3; c++) {
    const sa = stats(planesA[c]);
    const sb = stats(planesB[c]);
    const ratio = sa.std > 1e-3 ? Math.min(1.25, Math.max(0.8, sb.std / sa.std)) : 1;
    const plane = planesA[c];
    for (let i = 0; i < plane.length; i++) if (mask[i]) plane[i] = (plane[i] - sa.mean) * ratio + sb.mean;
  }
  const rgb = new Uint8Array(3);
  for (let i = 0; i < width * height; i++) {
    if (!mask[i]) continue;
    labToRgbInto(a.L[i], a.a[i], a.b[i], rgb, 0);
    patch[i * 3] = rgb[0];
    patch[i * 3 + 1] = rgb[1];
    patch[i * 3 + 2] = rgb[2];
  }
}

/**
 * Seamless cloning of `patch` into `target` inside `polygon` by mean-value coordinates: the
 * differences target − patch along the outline are interpolated over the inside (a smooth membrane)
 * and added to the patch, so the result meets the target without a seam while keeping the patch's
 * detail; the last `feather` px inside the outline are blended linearly as well. `target` is
 * interleaved RGB bytes and is modified in place. The patch must be defined inside the polygon.
 */
export function cloneSeamless(
  target: Uint8Array,
  width: number,
  height: number,
  patch: Float32Array,
  polygon: readonly Point[],
  feather: number,
  outlinePoints = 96,
): void {
  const outline = resampleOutline(polygon, outlinePoints);
  const m = outline.length;
  // Differences on the outline, averaged over a 3×3 neighbourhood to keep noise out of the membrane.
  const diff = new Float32Array(m * 3);
  const tmp = new Float32Array(3);
  for (let k = 0; k < m; k++) {
    const [ox, oy] = outline[k];
    let n = 0;
    for (let dy = -1; dy <= 1; dy++) {
      for (let dx = -1; dx <= 1; dx++) {
        const x = Math.min(width - 1, Math.max(0, Math.round(ox + dx)));
        const y = Math.min(height - 1, Math.max(0, Math.round(oy + dy)));
        const p = (y * width + x) * 3;
        for (let c = 0; c < 3; c++) tmp[c] = target[p + c] - patch[p + c];
        for (let c = 0; c < 3; c++) diff[k * 3 + c] += tmp[c];
        n++;
      }
    }
    for (let c = 0; c < 3; c++) diff[k * 3 + c] /= n;
  }
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const [x, y] of polygon) {
    minX = Math.min(minX, x);
    minY = Math.min(minY, y);
    maxX = Math.max(maxX, x);
    maxY = Math.max(maxY, y);
  }
  const x0 = Math.max(0, Math.floor(minX));
  const x1 = Math.min(width - 1, Math.ceil(maxX));
  const y0 = Math.max(0, Math.floor(minY));
  const y1 = Math.min(height - 1, Math.ceil(maxY));
  const ux = new Float64Array(m);
  const uy = new Float64Array(m);
  const r = new Float64Array(m);
  const tanHalf = new Float64Array(m);
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      if (!insidePolygon(x, y, polygon)) continue;
      const p = y * width + x;
      let onOutline = -1;
      for (let k = 0; k < m; k++) {
        const dx = outline[k][0] - x;
        const dy = outline[k][1] - y;
        r[k] = Math.hypot(dx, dy);
        if (r[k] < 1e-6) onOutline = k;
        ux[k] = dx;
        uy[k] = dy;
      }
      const membrane = [0, 0, 0];
      if (onOutline >= 0) {
        for (let c = 0; c < 3; c++) membrane[c] = diff[onOutline * 3 + c];
      } else {
        for (let k = 0; k < m; k++) {
          const k1 = (k + 1) % m;
          const cos = (ux[k] * ux[k1] + uy[k] * uy[k1]) / (r[k] * r[k1]);
          const sin = (ux[k] * uy[k1] - uy[k] * ux[k1]) / (r[k] * r[k1]);
          // tan(α/2) = sin α / (1 + cos α)
          tanHalf[k] = sin / Math.max(1e-9, 1 + cos);
        }
        let total = 0;
        for (let k = 0; k < m; k++) {
          const w = (tanHalf[(k + m - 1) % m] + tanHalf[k]) / r[k];
          total += w;
          for (let c = 0; c < 3; c++) membrane[c] += w * diff[k * 3 + c];
        }
        if (Math.abs(total) > 1e-12) for (let c = 0; c < 3; c++) membrane[c] /= total;
      }
      const edge = feather > 0 ? Math.min(1, distanceToOutline(x, y, polygon) / feather) : 1;
      for (let c = 0; c < 3; c++) {
        const cloned = patch[p * 3 + c] + membrane[c];
        const value = target[p * 3 + c] * (1 - edge) + cloned * edge;
        target[p * 3 + c] = value <= 0 ? 0 : value >= 255 ? 255 : Math.round(value);
      }
    }
  }
}
