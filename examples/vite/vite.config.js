import { defineConfig } from "vite";

export default defineConfig({
  // The dev server pre-bundles dependencies into node_modules/.vite/deps,
  // where replica.wasm and wasm_exec.js (found beside the package's
  // index.js through new URL(..., import.meta.url)) are not: serve the
  // package as is instead. `vite build` follows those URLs and emits both
  // files into dist/assets either way.
  optimizeDeps: { exclude: ["@replica-sync/replica"] },
});
