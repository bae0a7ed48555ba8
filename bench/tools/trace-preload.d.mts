// bench/tools/trace-preload.mjs patches node:net on import and exports nothing.
export {}
