/**
 * The small part of `@techstark/opencv-js` (OpenCV 4.5 compiled to WebAssembly) that the local
 * tools use. The package's own typings re-export a module (`mirada`) it does not install, so they
 * are not used.
 */
export interface CvMat {
  readonly rows: number;
  readonly cols: number;
  readonly data: Uint8Array;
  delete(): void;
}

export interface CvSize {
  width: number;
  height: number;
}

export interface CvPoint {
  x: number;
  y: number;
}

export interface OpenCv {
  Mat: new (rows?: number, cols?: number, type?: number) => CvMat;
  Size: new (width: number, height: number) => CvSize;
  Point: new (x: number, y: number) => CvPoint;
  matFromArray(rows: number, cols: number, type: number, array: ArrayLike<number>): CvMat;
  getStructuringElement(shape: number, size: CvSize): CvMat;
  dilate(src: CvMat, dst: CvMat, kernel: CvMat, anchor: CvPoint, iterations: number): void;
  inpaint(src: CvMat, mask: CvMat, dst: CvMat, inpaintRadius: number, flags: number): void;
  readonly CV_8UC1: number;
  readonly CV_8UC3: number;
  readonly MORPH_ELLIPSE: number;
  readonly INPAINT_TELEA: number;
  readonly INPAINT_NS: number;
  /** Set before the runtime is ready; called once it is. */
  onRuntimeInitialized?: () => void;
}
