// Builds the web demo into dist/: app.js (bundled with esbuild), app.css, index.html.
//   node build.mjs            production build (minified, with a source map)
//   node build.mjs --watch    rebuild on change (development)
import { build, context } from "esbuild";
import { copyFile, mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
const watch = process.argv.includes("--watch");

const options = {
  entryPoints: { app: join(here, "src/main.ts") },
  outdir: dist,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022", "chrome110", "firefox115", "safari16"],
  minify: !watch,
  sourcemap: true,
  legalComments: "linked",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "info",
};

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
await copyFile(join(here, "src/index.html"), join(dist, "index.html"));
await copyFile(join(here, "src/style.css"), join(dist, "app.css"));
if (watch) {
  const ctx = await context(options);
  await ctx.watch();
} else {
  await build(options);
}
