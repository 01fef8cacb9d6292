import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The app calls `symfonic serve` on its own origin (CORS, `--cors-origin`), so the
// dev server needs no proxy; 5173 is the origin the README tells the server to allow.
export default defineConfig({
  plugins: [react()],
  server: { port: 5173, strictPort: true },
  preview: { port: 4173, strictPort: true },
  // CopilotKit's chat brings Markdown, code highlighting and diagrams: large chunks are expected.
  build: { chunkSizeWarningLimit: 3000 },
});
